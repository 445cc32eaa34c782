"""The deposit verifier on fakes: which intents it asks the second provider about, and
that a provider with no usable answer keeps the prefill unsigned (fails closed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.execution.execution_store_fake import FakeDeposits
from tests.unit.execution.test_deposit_check import CONFIG, FakeProvider

from intentd.chain.errors import ChainUnavailable, NoAnswer
from intentd.execution.deposit_check import Credited
from intentd.execution.deposit_verifier import DepositVerifier
from intentd.settings import Settings, load_settings

USDC = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
INTENT = "0x" + "11" * 20
BLOCK = "0x" + "b0" * 32


class Unavailable(FakeProvider):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def view(self, tag: str, number: int, *, full: bool) -> tuple[int, dict[str, Any] | None]:
        self.tags.append(tag)
        raise self.error


def deposit(amount: int) -> Credited:
    return Credited("0x" + "cc" * 32, USDC, 0, INTENT, amount, 100, BLOCK)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(extra='verify_rpc_urls = ["https://other.example/key2"]'))
    return load_settings(path, {})


async def unconfirmed(verifier: DepositVerifier, deposits: FakeDeposits) -> list[str]:
    return await verifier.unconfirmed(deposits, 7)


@pytest.mark.parametrize("error", [NoAnswer("timeout"), ChainUnavailable("error -32000")])
async def test_a_provider_without_a_usable_answer_keeps_the_prefill_unsigned(
    settings: Settings, error: Exception
) -> None:
    provider = Unavailable(error)
    verifier = DepositVerifier(settings, {"BASE": provider})

    [reason] = await unconfirmed(verifier, FakeDeposits([deposit(2_000_000_000)], ("BASE", USDC)))

    assert reason.startswith("second provider of BASE did not answer")
    assert provider.tags == ["latest"]


async def test_deposits_at_or_below_the_threshold_are_not_asked_about(settings: Settings) -> None:
    provider = FakeProvider()
    verifier = DepositVerifier(settings, {"BASE": provider})

    assert await unconfirmed(verifier, FakeDeposits([deposit(1_000_500_000)], ("BASE", USDC))) == []
    assert provider.tags == []


async def test_an_unknown_intent_or_source_is_a_reason(settings: Settings) -> None:
    verifier = DepositVerifier(settings, {"BASE": FakeProvider()})

    assert await unconfirmed(verifier, FakeDeposits([], None)) == ["intent 7 not found"]
    [reason] = await unconfirmed(verifier, FakeDeposits([], ("OTHER", USDC)))
    assert "is not configured" in reason


async def test_a_chain_without_its_provider_is_a_reason(settings: Settings) -> None:
    verifier = DepositVerifier(settings, {})

    [reason] = await unconfirmed(verifier, FakeDeposits([deposit(2_000_000_000)], ("BASE", USDC)))

    assert reason == "chains.BASE.verify_rpc_urls is not configured"
