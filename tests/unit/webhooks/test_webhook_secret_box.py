from __future__ import annotations

import base64
import os
from uuid import uuid4

import pytest

from intentd.webhooks.secret_box import SecretBox, SecretBoxError, parse_key


def test_a_sealed_secret_opens_for_its_endpoint_only() -> None:
    box = SecretBox(os.urandom(32))
    endpoint = uuid4()
    sealed = box.seal("whsec_abc", endpoint)
    assert b"whsec_abc" not in sealed
    assert box.open(sealed, endpoint) == "whsec_abc"
    with pytest.raises(SecretBoxError):
        box.open(sealed, uuid4())
    with pytest.raises(SecretBoxError):
        SecretBox(os.urandom(32)).open(sealed, endpoint)
    with pytest.raises(SecretBoxError):
        box.open(sealed[:-1] + bytes([sealed[-1] ^ 1]), endpoint)


def test_keys_are_32_bytes_in_base64_or_hex() -> None:
    key = os.urandom(32)
    assert parse_key(base64.b64encode(key).decode()) == key
    assert parse_key(base64.urlsafe_b64encode(key).decode().rstrip("=")) == key
    assert parse_key(key.hex()) == key
    with pytest.raises(SecretBoxError):
        parse_key(base64.b64encode(os.urandom(16)).decode())
    assert "key" in repr(SecretBox(key)) and key.hex() not in repr(SecretBox(key))
