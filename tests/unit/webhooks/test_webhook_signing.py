"""Signatures checked by an independent implementation: the ``standardwebhooks`` package."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from intentd.webhooks.signing import (
    SignatureError,
    new_secret,
    secret_key,
    sign,
    signed_headers,
    verify,
)


@given(body=st.binary(max_size=2000).map(lambda b: b.hex().encode()), msg_id=st.uuids())
def test_standardwebhooks_verifies_what_we_sign(body: bytes, msg_id: object) -> None:
    secret = new_secret()
    now = int(time.time())
    headers = signed_headers(str(msg_id), now, body, [secret])
    Webhook(secret).verify(body, headers, json_parse=False)
    verify(secret, headers, body, now=now)


def test_standardwebhooks_signature_is_ours() -> None:
    secret = new_secret()
    when = datetime(2026, 11, 23, tzinfo=UTC)
    theirs = Webhook(secret).sign("msg_1", when, '{"a":1}')
    assert sign(secret, "msg_1", int(when.timestamp()), b'{"a":1}') == theirs


def test_during_rotation_both_secrets_verify_and_a_third_does_not() -> None:
    new, old, other = new_secret(), new_secret(), new_secret()
    now = int(time.time())
    headers = signed_headers("evt", now, b"{}", [new, old])
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (new, old):
        Webhook(secret).verify(b"{}", headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(b"{}", headers, json_parse=False)
    with pytest.raises(SignatureError):
        verify(other, headers, b"{}", now=now)


def test_a_changed_body_or_a_stale_timestamp_is_refused() -> None:
    secret = new_secret()
    now = int(time.time())
    headers = signed_headers("evt", now, b'{"amount":"1"}', [secret])
    with pytest.raises(SignatureError):
        verify(secret, headers, b'{"amount":"2"}', now=now)
    with pytest.raises(SignatureError):
        verify(secret, headers, b'{"amount":"1"}', now=now + 301)


def test_secrets_are_whsec_base64_of_32_bytes() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert len(secret_key(secret)) == 32
    with pytest.raises(SignatureError):
        secret_key("whsec_not base64!")
    with pytest.raises(SignatureError):
        signed_headers("evt", 1, b"", [])
