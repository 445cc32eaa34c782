"""Intent creation rules (pure part): validation codes and computed figures."""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import orjson
import pytest

from intentd.intents.service import IntentRequest, IntentRequestError, plan_intent
from intentd.settings import NATIVE_TOKEN, Settings

USDC_BASE = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
USDC_ARB = "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"
USDT_ARB = "0x" + "7" * 40
RECIPIENT = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
CLIENT = UUID(int=7)


def token(address: str, symbol: str, decimals: int = 6) -> dict[str, Any]:
    return {
        "address": address,
        "symbol": symbol,
        "name": symbol,
        "decimals": decimals,
        "category": "stablecoin",
    }


RELAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"

SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": {
            "BASE_TESTNET": {
                "chain_id": 84532,
                "network": "test",
                "rpc_urls": ["http://a"],
                "relayer": RELAYER,
                "tokens": [token(USDC_BASE, "USDC")],
            },
            "ARBITRUM_TESTNET": {
                "chain_id": 421614,
                "network": "test",
                "rpc_urls": ["http://b"],
                "relayer": RELAYER,
                "tokens": [token(USDC_ARB, "USDC"), token(USDT_ARB, "USDT", 18)],
            },
        },
    }
)


def request(**changes: Any) -> IntentRequest:
    base: dict[str, Any] = {
        "amount": "12.5",
        "token_in": USDC_BASE,
        "source_chain": "BASE_TESTNET",
        "destination_chain": "ARBITRUM_TESTNET",
        "recipient": RECIPIENT,
        "refund_address": RECIPIENT,
    }
    base.update(changes)
    return IntentRequest(**base)


def test_plan_computes_figures() -> None:
    new = plan_intent(SETTINGS, request(), client_id=CLIENT, now=NOW)
    assert new.total_due == 12_500_000
    assert new.token_out == USDC_ARB.lower()
    assert new.amount_out == 12_500_000
    assert new.asset_token_symbol == "USDC" and new.asset_token_decimals == 6
    assert new.recipient == RECIPIENT.lower()
    assert new.expires_at == NOW + timedelta(seconds=SETTINGS.intents.default_expires_in)
    assert new.initial_amount == "12.5"


def test_token_out_with_other_decimals_is_rescaled() -> None:
    new = plan_intent(SETTINGS, request(token_out=USDT_ARB), client_id=CLIENT, now=NOW)
    assert new.amount_out == 12_500_000 * 10**12


def test_native_token() -> None:
    new = plan_intent(
        SETTINGS, request(token_in=NATIVE_TOKEN, amount="0.01"), client_id=CLIENT, now=NOW
    )
    assert new.total_due == 10**16
    assert new.token_out == NATIVE_TOKEN.lower()
    assert new.total_in_usd is None  # no price source for ETH yet


def test_same_request_same_fingerprint() -> None:
    assert request().fingerprint() == request().fingerprint()
    assert request().fingerprint() != request(amount="12.6").fingerprint()


@pytest.mark.parametrize(
    ("changes", "code", "field"),
    [
        ({"source_chain": "SOLANA"}, "unknown_chain", "source_chain"),
        ({"destination_chain": "base"}, "unknown_chain", "destination_chain"),
        ({"token_in": USDC_ARB}, "unknown_token", "tokenIn"),
        ({"token_in": "0x123"}, "invalid_address", "tokenIn"),
        ({"recipient": RECIPIENT.replace("C8", "c8")}, "invalid_address_checksum", "recipient"),
        ({"recipient": ""}, "field_required", "recipient"),
        ({"refund_address": "vitalik.eth"}, "invalid_address", "refund_address"),
        ({"amount": "12.1234567"}, "amount_too_precise", "amount"),
        ({"amount": "-1"}, "amount_negative", "amount"),
        ({"amount": "0"}, "amount_zero", "amount"),
        ({"amount": "1e3"}, "amount_malformed", "amount"),
        ({"amount_symbol": "ETH"}, "unsupported_amount_symbol", "amountSymbol"),
        ({"expires_in": 10}, "invalid_expiry", "expires_in"),
        ({"metadata": {"x": "y" * 20_000}}, "metadata_too_large", "metadata"),
        ({"metadata": {"a": [1, {"b": 1.9e19}]}}, "invalid_metadata", "metadata"),
        ({"metadata": {"a": -(2**63)}}, "invalid_metadata", "metadata"),
        ({"metadata": {"a": float("nan")}}, "invalid_metadata", "metadata"),
        ({"token_in": NATIVE_TOKEN, "token_out": USDC_ARB}, "unsupported_route", "tokenOut"),
    ],
)
def test_invalid_requests_get_stable_codes(changes: dict[str, Any], code: str, field: str) -> None:
    with pytest.raises(IntentRequestError) as raised:
        plan_intent(SETTINGS, request(**changes), client_id=CLIENT, now=NOW)
    assert (raised.value.code, raised.value.field) == (code, field)


def test_lowercase_and_usd_symbol_accepted() -> None:
    new = plan_intent(
        SETTINGS,
        request(recipient=RECIPIENT.lower(), amount_symbol="USD"),
        client_id=CLIENT,
        now=NOW,
    )
    assert new.recipient == RECIPIENT.lower()


def test_metadata_numbers_up_to_64_bits_are_kept() -> None:
    metadata = {"big": 2**63 - 1, "small": -(2**63) + 1, "ratio": 1.5e-300, "flag": True}
    new = plan_intent(SETTINGS, request(metadata=metadata), client_id=CLIENT, now=NOW)
    assert new.metadata == metadata


def test_an_intent_expires_by_its_cap_and_its_hash_ignores_the_clock() -> None:
    """A session's intent is capped at the session's end (a moment): planned a second
    apart, the same request hashes the same and ends at the same moment."""
    end = NOW + timedelta(seconds=600)
    capped = request(expires_by=end)
    first = plan_intent(SETTINGS, capped, client_id=CLIENT, now=NOW)
    later = plan_intent(SETTINGS, capped, client_id=CLIENT, now=NOW + timedelta(seconds=1))
    assert first.expires_at == later.expires_at == end
    assert first.request_hash == later.request_hash
    assert capped.fingerprint() != request().fingerprint()
    uncapped = plan_intent(
        SETTINGS, request(expires_by=NOW + timedelta(days=30)), client_id=CLIENT, now=NOW
    )
    assert uncapped.expires_at == NOW + timedelta(seconds=SETTINGS.intents.default_expires_in)


def test_a_request_without_a_cap_hashes_as_before_the_cap_existed() -> None:
    """Stored idempotency keys keep matching their retries across the upgrades (the
    session cap ``expires_by``, then ``slippage``)."""
    fields = asdict(request())
    del fields["expires_by"], fields["slippage"]
    before = hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()
    assert request().fingerprint() == before
