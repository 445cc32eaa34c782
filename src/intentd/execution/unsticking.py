"""A transaction that waited longer than ``stuck_after``: re-broadcast or replace it.

Guarantees:

- A stuck transaction the node no longer knows is broadcast again, the same recorded
  bytes (harmless if it is known after all), and its stuck clock restarts.
- One the node holds but does not mine is replaced: same nonce and signer, fees
  raised (``execution.replacement``), recorded under the action's row lock in the
  store transaction that moves the old one ``sent → replaced`` (compare-and-set: a
  transaction mined, replaced or dropped meanwhile is left to the next tick), and
  broadcast after that commits. The old one may still be mined: whichever of the
  group is mined wins (``execution.tracking``).
- No replacement above the chain's cap or above what a top-up pays for; the
  transaction then keeps waiting.
"""

from __future__ import annotations

import structlog

from intentd import observability as metrics
from intentd.domain.actions import Action, ActionStatus
from intentd.execution.ports import ChainWriter, ExecutionStore
from intentd.execution.replacement import (
    needs_budget,
    replacement_cap,
    replacement_plan,
    signer_of,
    topup_budget,
)
from intentd.execution.sending import Sender
from intentd.execution.tracking import Tx, TxStatus
from intentd.settings import ChainConfig

__all__ = ["Unsticker"]

log = structlog.get_logger()


class Unsticker:
    """Re-broadcasts or replaces the stuck transactions of one chain."""

    def __init__(
        self, chain: ChainConfig, *, store: ExecutionStore, writer: ChainWriter, sender: Sender
    ) -> None:
        self._chain = chain
        self._name = chain.name
        self._store = store
        self._writer = writer
        self._sender = sender

    async def unstick(self, action: Action, stale: Tx) -> None:
        """Re-broadcast a transaction the node forgot; replace one it holds but won't mine."""
        known = (await self._writer.known([stale.tx_hash]))[stale.tx_hash]
        if not known:
            log.warning("node forgot the transaction; re-broadcasting", tx_hash=stale.tx_hash)
            await self._writer.send_raw(stale.raw)
            async with self._store.transaction() as work:
                await work.touch(stale.id)
            metrics.CHAIN_TRANSACTIONS.labels(self._name, stale.purpose.value, "rebroadcast").inc()
            return
        await self._replace(action, stale)

    async def _replace(self, action: Action, stale: Tx) -> None:
        market = await self._writer.fee_inputs()
        budget = 0
        if needs_budget(action, stale):
            async with self._store.transaction() as work:
                held = await work.gas_credit(action, stale.signer)
                budget = topup_budget(await work.history(action.id)) if held is None else held
        cap = replacement_cap(self._chain.max_fee_per_gas, action, stale, budget)
        plan = replacement_plan(action, stale, base_fee=market.base_fee, tip=market.tip, cap=cap)
        if plan is None:
            log.warning("stuck transaction cannot be bumped further", tx_hash=stale.tx_hash)
            async with self._store.transaction() as work:
                await work.touch(stale.id)
            return
        kind, index = signer_of(action, stale.purpose)
        async with self._store.transaction() as work:
            if await work.lock_action(action.id, ActionStatus.SUBMITTED) is None:
                return
            if not await work.set_tx_status(
                stale.id, TxStatus.REPLACED, old=frozenset({TxStatus.SENT})
            ):
                return  # mined, replaced or dropped meanwhile: the next tick sees it
            recorded = await self._sender.record(work, action, plan, kind, index, nonce=stale.nonce)
        metrics.CHAIN_TRANSACTIONS.labels(self._name, stale.purpose.value, "replaced").inc()
        log.info("stuck transaction replaced", old=stale.tx_hash, new=recorded.tx_hash)
        await self._sender.after_record(recorded)
