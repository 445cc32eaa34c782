"""API keys (shape, hashing, modes) and session tokens (signing, verification)."""

from __future__ import annotations

import base64
from uuid import uuid4

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.api.sessions.tokens import Session, SessionError, sign_session, verify_session
from intentd.credentials import allowed_networks, generate_key, hash_key, looks_like_key

SECRET = b"k" * 32


def test_keys_are_random_prefixed_and_stored_as_hashes() -> None:
    first, second = generate_key("test"), generate_key("live")
    assert first.key.startswith("itd_test_") and second.key.startswith("itd_live_")
    assert looks_like_key(first.key) and looks_like_key(second.key)
    assert first.key_hash == hash_key(first.key) != second.key_hash
    assert first.key.startswith(first.prefix) and len(first.prefix) < len(first.key)
    assert first.key not in repr(first)


@pytest.mark.parametrize("text", ["", "itd_test_short", "itd_prod_" + "a" * 43, "Bearer x"])
def test_malformed_keys_are_recognised(text: str) -> None:
    assert not looks_like_key(text)


@pytest.mark.parametrize(
    ("mode", "environment", "networks"),
    [
        ("live", "production", {"main"}),
        ("live", "test", {"main"}),
        ("test", "production", {"test"}),
        ("test", "test", {"test", "main"}),
    ],
)
def test_network_classes_per_mode(mode: str, environment: str, networks: set[str]) -> None:
    assert allowed_networks(mode, environment) == networks  # type: ignore[arg-type]


def session(**changes: object) -> Session:
    fields: dict[str, object] = {
        "id": "ses_1",
        "key_id": uuid4(),
        "client_id": uuid4(),
        "recipient": "0x" + "ab" * 20,
        "amount": "12.5",
        "destination_chain": "BASE",
        "token": "0x" + "cd" * 20,
        "exclude_chains": ("ARBITRUM",),
        "issued_at": 1000,
        "expires_at": 1900,
    }
    fields.update(changes)
    return Session(**fields)  # type: ignore[arg-type]


def test_a_signed_session_verifies_to_itself_until_it_expires() -> None:
    original = session(amount=None)
    token = sign_session(original, SECRET)
    assert verify_session(token, SECRET, 1899.9) == original
    with pytest.raises(SessionError) as raised:
        verify_session(token, SECRET, 1900)
    assert raised.value.code == "session_expired"


def test_another_secret_or_a_changed_payload_is_refused() -> None:
    token = sign_session(session(), SECRET)
    with pytest.raises(SessionError) as raised:
        verify_session(token, b"x" * 32, 1000)
    assert raised.value.code == "invalid_session_token"
    payload, signature = token.removeprefix("itd_sess_").split(".")
    data = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["amt"] = "0.01"
    forged = base64.urlsafe_b64encode(orjson.dumps(data)).rstrip(b"=").decode()
    with pytest.raises(SessionError):
        verify_session(f"itd_sess_{forged}.{signature}", SECRET, 1000)


@given(st.text(max_size=200))
def test_garbage_is_refused_with_a_stable_code(text: str) -> None:
    with pytest.raises(SessionError) as raised:
        verify_session(text, SECRET, 0)
    assert raised.value.code == "invalid_session_token"
