"""An intent created in a payment-modal session expires by the time its session does:
the modal watches the intent with the session token, so the intent must not outlive
it (the payer's countdown is the intent's), and a session too close to its end to
leave time for a payment creates no intent."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from tests.integration.api.conftest import SESSION_SECRET, Api

from intentd.adapters.postgres import Pool, api_keys
from intentd.api.sessions.tokens import Session, sign_session
from intentd.credentials import hash_key

PAYER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def usdc(api: Api, chain: str) -> str:
    return next(t.address for t in api.settings.chains[chain].tokens if t.symbol == "USDC")


def when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def five_minute_session(api: Api, key: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A session of 300 s (shorter than an intent's default lifetime) and the payer's
    choice of a source for it."""
    body = {
        "recipient": PAYER,
        "amount": "5",
        "destinationChain": "ARBITRUM_TESTNET",
        "token": usdc(api, "ARBITRUM_TESTNET"),
        "expires_in": 300,
    }
    status, session, _ = await api.call("POST", "/sessions", key, body=body)
    assert status == 201, session
    choice = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYER,
    }
    return session, choice


async def test_a_session_intent_expires_when_its_session_does(api: Api, test_key: str) -> None:
    session, choice = await five_minute_session(api, test_key)
    status, intent, _ = await api.call(
        "POST", "/session/intents", session["session_token"], body=choice
    )
    assert status == 201, intent
    assert api.settings.intents.default_expires_in > 300
    ends = when(session["expires_at"])
    assert ends - 1 < when(intent["expires_at"]) <= ends


async def test_a_session_about_to_expire_creates_no_intent(
    api: Api, test_key: str, pool: Pool
) -> None:
    async with pool.acquire() as conn:
        key = await api_keys.find_by_hash(conn, hash_key(test_key))
    assert key is not None
    now = int(time.time())
    left = api.settings.intents.min_expires_in - 5
    session = Session(
        id="ses_nearly_over",
        key_id=key.id,
        client_id=key.client_id,
        recipient=PAYER.lower(),
        amount="5",
        destination_chain="ARBITRUM_TESTNET",
        token=usdc(api, "ARBITRUM_TESTNET").lower(),
        exclude_chains=(),
        issued_at=now - 600,
        expires_at=now + left,
    )
    token = sign_session(session, SESSION_SECRET.encode())
    choice = {
        "source_chain": "BASE_TESTNET",
        "tokenIn": usdc(api, "BASE_TESTNET"),
        "refund_address": PAYER,
    }
    status, problem, response = await api.call("POST", "/session/intents", token, body=choice)
    assert (status, problem["code"]) == (401, "session_expired")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    status, _, _ = await api.call("GET", "/session", token)
    assert status == 200  # the session itself is still good for reading


async def test_a_retried_session_create_is_the_same_intent_seconds_later(
    api: Api, test_key: str
) -> None:
    """The intent's lifetime shrinks with the session's, second by second; a retry of
    the same create (same Idempotency-Key, same body) is still the same request."""
    session, choice = await five_minute_session(api, test_key)
    retry = {"Idempotency-Key": "checkout-retry-1"}
    token = session["session_token"]
    status, first, _ = await api.call("POST", "/session/intents", token, body=choice, headers=retry)
    assert status == 201, first
    time.sleep(1.1)  # the session has a second less to live: the lifetime now differs
    status, again, _ = await api.call("POST", "/session/intents", token, body=choice, headers=retry)
    assert status in (200, 201), again
    assert again["intent_address"] == first["intent_address"]
    assert again["expires_at"] == first["expires_at"]
