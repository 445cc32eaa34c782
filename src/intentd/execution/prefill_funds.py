"""Whether the relayer can pay a prefill now, and what a prefill that finds it short does.

Guarantees (docs/execution.md, "The relayer's float"):

- A prefill is signed only when the relayer's balances cover its amount (and, in the
  native coin, the most its gas can cost) on top of every prefill of the chain already
  signed and not yet confirmed (``domain.liquidity.shortfall``). The balances are read in
  one request from one node whose head is at or above the newest block holding a
  confirmed transfer of the relayer; a node below it decides nothing (the prefill is
  looked at again in ``STALE_WAIT`` seconds). The check runs in the claim's transaction,
  under the chain's prefill lock (``Funds.relayer_commitments``), before the
  gas estimate (which reverts on a token the relayer lacks) and again with the plan's gas.
- A prefill that finds the relayer short is not signed and no attempt is counted: it
  stays ``ready``, postponed (:func:`while_short`: rechecked after a delay that grows with
  its wait, 2 to 30 s), ``last_error`` says what is missing,
  ``intentd_prefills_short_total{chain,token}`` counts each look and an error log asks
  for a refill (once per prefill and process). Once it has waited
  ``liquidity.prefill_wait`` seconds since it was created (the intent became FUNDED), it
  fails: the ``failed`` result goes to the outbox in the same transaction and the
  lifecycle refunds the payer.
- A crash at any point leaves the prefill ``ready`` and unsigned (postponed or not), or
  ``failed`` with its one result; never both, never signed.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from intentd import observability as metrics
from intentd.domain.actions import NATIVE, Action
from intentd.domain.amounts import format_amount
from intentd.domain.liquidity import shortfall
from intentd.domain.wait_codes import WaitCode, wait_error
from intentd.execution.endings import failed_attempt
from intentd.execution.policy import RetryPolicy
from intentd.execution.ports import NodeReader, StoreTransaction
from intentd.faults import crash_point
from intentd.settings import ChainConfig, LiquidityConfig

__all__ = ["STALE_WAIT", "GiveUp", "PrefillFunds", "Reading", "Wait", "while_short"]

log = structlog.get_logger()

STALE_WAIT = 2.0
"""Seconds a prefill waits when the balances came from a node behind our own payments."""
_GIVE_UP = RetryPolicy(max_attempts=1, backoff=0.0)
"""The retry policy of a prefill whose wait for funds is over: it fails now."""


@dataclass(frozen=True, slots=True)
class Wait:
    delay: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    pass


def while_short(waited: float, bound: float) -> Wait | GiveUp:
    """What a prefill that finds the relayer short does, ``waited`` seconds after it was
    created: wait (a quarter of its wait so far, 2 to 30 s, never past ``bound``), or, at
    ``bound``, give up."""
    left = bound - waited
    if left <= 0:
        return GiveUp()
    return Wait(min(max(waited / 4, 2.0), 30.0, left))


@dataclass(frozen=True, slots=True)
class Reading:
    """The relayer's balances and commitments, as one prefill check saw them."""

    balances: dict[str, int]
    in_flight: dict[str, int]


class PrefillFunds:
    """The prefill checks of one chain's relayer."""

    def __init__(
        self, chain: ChainConfig, config: LiquidityConfig, *, reader: NodeReader, relayer: str
    ) -> None:
        self._chain = chain
        self._bound = config.prefill_wait
        self._reader = reader
        self._relayer = relayer.lower()
        self._alerted: set[int] = set()
        """Prefills an error log asked a refill for (once per process)."""

    async def read(self, work: StoreTransaction, action: Action) -> Reading | None:
        """The relayer's balances of the prefill's token and the native coin, and its
        prefills in flight; None (the prefill postponed) when the node lags our payments."""
        committed = await work.funds.relayer_commitments(self._relayer)
        tokens = sorted({action.token, NATIVE})
        read = await self._reader.balances([(self._relayer, token) for token in tokens])
        if read.block < committed.newest_paid:
            log.warning(
                "the relayer's balance came from a node behind its confirmed payments;"
                " the prefill waits",
                node_head=read.block,
                newest_paid=committed.newest_paid,
            )
            error = wait_error(
                WaitCode.NODE_LAGS,
                f"balance read at block {read.block} < {committed.newest_paid} (node lags)",
            )
            await work.actions.postpone(action.id, delay=STALE_WAIT, error=error)
            return None
        balances = {token: read.amounts.get((self._relayer, token), 0) for token in tokens}
        return Reading(balances, committed.in_flight)

    async def enough(
        self, work: StoreTransaction, action: Action, reading: Reading, *, gas: int = 0
    ) -> bool:
        """Whether the relayer can pay ``action`` and ``gas`` wei of native coin for it;
        if not, the prefill is postponed, or failed once its wait is over."""
        needs = {action.token: action.amount}
        needs[NATIVE] = needs.get(NATIVE, 0) + gas
        short = shortfall(needs, reading.balances, reading.in_flight)
        if not short:
            return True
        lacking = ", ".join(f"{self._units(token, lack)}" for token, lack in sorted(short.items()))
        for token in short:
            metrics.PREFILLS_SHORT.labels(self._chain.name, self._symbol(token)).inc()
        waited = await work.actions.age(action.id)
        decision = while_short(waited, self._bound)
        if isinstance(decision, GiveUp):
            crash_point("executor.liquidity_expired")
            error = f"the relayer lacked {lacking} for {round(waited)} s (liquidity.prefill_wait)"
            log.error("a prefill waited for funds too long; it fails and the payer is refunded",
                      lacking=lacking, waited=round(waited))  # fmt: skip
            await failed_attempt(work, action, error, policy=_GIVE_UP, chain=self._chain.name)
            return False
        crash_point("executor.liquidity_short")
        if action.id not in self._alerted:
            self._alerted.add(action.id)
            log.error(
                "the relayer is short for a prefill; it waits; refill the relayer"
                " (operator action needed)",
                lacking=lacking,
                waited=round(waited),
                fails_in=round(self._bound - waited),
            )
        else:
            log.warning("prefill still waits for the relayer's funds", lacking=lacking)
        error = wait_error(
            WaitCode.LIQUIDITY_SHORT,
            f"the relayer lacks {lacking}; waiting up to {round(self._bound)} s for a refill",
        )
        await work.actions.postpone(action.id, delay=decision.delay, error=error)
        return False

    def _symbol(self, token: str) -> str:
        found = self._chain.token(token)
        return found.symbol if found is not None else token

    def _units(self, token: str, amount: int) -> str:
        found = self._chain.token(token)
        if found is None:
            return f"{amount} base units of {token}"
        return f"{format_amount(amount, found.decimals)} {found.symbol}"
