"""The console's "why it is waiting" matches the executor's wait reasons by their stable
codes (``domain.wait_codes``), written by the executor with the text, never by words of
free text; the texts shown stay as they were (issue 19, executor lag, finding 6)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.unit.console.test_waiting import PREFILL, facts, reasons
from tests.unit.execution.execution_fakes import TOKEN
from tests.unit.execution.test_executor_on_fakes import GAS_TANK, RELAYER, Harness

from intentd.console.waiting import ErrorKind, Reason, Why, classify_error, why_waiting
from intentd.domain.actions import NATIVE, ActionKind
from intentd.domain.status import IntentStatus
from intentd.domain.wait_codes import WaitCode, wait_error, wait_text

USDC = 10**6


def shown(last_error: str | None) -> list[Why]:
    """Why a funded intent waits whose prefill is ready with ``last_error``."""
    action = replace(PREFILL, last_error=last_error)
    return why_waiting(facts(status=IntentStatus.FUNDED, received=10_000_000, actions=[action]))


async def test_a_prefill_the_relayer_cannot_pay_is_shown_as_the_relayer_short() -> None:
    h = Harness()
    h.chain.funds = {(RELAYER, TOKEN): USDC // 2, (RELAYER, NATIVE): 10**18,
                     (GAS_TANK, NATIVE): 10**18}  # fmt: skip
    action_id = h.prefill(USDC)
    await h.tick()
    error = h.store.row(action_id).last_error
    assert error is not None and "the relayer lacks 0.5 USDC" in error  # the text, kept
    assert reasons(shown(error)) == [Reason.RELAYER_SHORT]


async def test_a_prefill_read_from_a_lagging_node_is_not_shown_as_a_failed_attempt() -> None:
    h = Harness()
    h.chain.funds = {(RELAYER, TOKEN): 10 * USDC, (RELAYER, NATIVE): 10**18,
                     (GAS_TANK, NATIVE): 10**18}  # fmt: skip
    first = h.prefill(USDC)
    await h.tick()
    await h.tick(mine=2)
    second = h.store.add_action(ActionKind.PREFILL, amount=USDC, to="0x" + "5b" * 20)
    h.writer.behind = lambda: 2  # below the block of our confirmed payment
    await h.tick()
    error = h.store.row(second).last_error
    assert h.store.row(first).last_error is None
    assert error is not None and "node lags" in error
    assert reasons(shown(error)) == [Reason.RPC_UNAVAILABLE]


async def test_fees_above_the_cap_are_shown_as_such() -> None:
    h = Harness()
    h.chain.base_fee = 600 * 10**9  # above the chain's cap (500 gwei)
    action_id = h.prefill()
    await h.tick()
    error = h.store.row(action_id).last_error
    assert reasons(shown(error)) == [Reason.FEES_ABOVE_CAP]


@pytest.mark.parametrize(
    "error",
    [
        "gas estimate reverted: execution reverted: insufficient funds",
        "transaction 0xabc reverted: relayer balance check",
        "gas estimate reverted: rpc says fee cap",
    ],
)
def test_free_text_of_a_failed_attempt_is_never_read_as_a_wait_reason(error: str) -> None:
    assert classify_error(error) is ErrorKind.OTHER
    [why] = shown(error)
    assert why.reason is Reason.RETRYING and why.params["error"] == error


def test_a_coded_wait_shows_its_text_without_the_code() -> None:
    error = wait_error(WaitCode.BELOW_GAS, "amount 5 wei does not cover 21000 gas")
    assert error.startswith("below_gas:") and wait_text(error) == (
        "amount 5 wei does not cover 21000 gas"
    )
    [why] = shown(error)
    assert why.params["error"] == "amount 5 wei does not cover 21000 gas"
    assert classify_error(wait_error(WaitCode.SECOND_PROVIDER, "x")) is ErrorKind.SECOND_PROVIDER
    assert classify_error("second_provider_x: y") is ErrorKind.OTHER  # exact, not a prefix
