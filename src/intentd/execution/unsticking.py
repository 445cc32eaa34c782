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
- A replacement transfer is planned like the first one (``execution.transfer_planner``):
  a native sweep on an ``op_stack`` chain leaves the L1 data fee bound at today's L1
  prices plus the margin. Without a bound, or when nothing would be left, there is no
  replacement; the transaction keeps waiting.
"""

from __future__ import annotations

import structlog

from intentd import observability as metrics
from intentd.domain.actions import Action, ActionStatus
from intentd.execution.gas import AmountBelowGas
from intentd.execution.ports import Broadcaster, ExecutionStore, FeeOracle, L1FeeUnavailable
from intentd.execution.replacement import (
    needs_budget,
    replacement_cap,
    replacement_plan,
    signer_of,
    topup_budget,
)
from intentd.execution.sending import TransactionSender
from intentd.execution.tracking import Tx, TxStatus
from intentd.execution.transfer_planner import TransferPlanner
from intentd.execution.tx_plans import Purpose, TxPlan, transfer_tx
from intentd.settings import ChainConfig

__all__ = ["Unsticker"]

log = structlog.get_logger()


class Unsticker:
    """Re-broadcasts or replaces the stuck transactions of one chain."""

    def __init__(
        self,
        chain: ChainConfig,
        *,
        store: ExecutionStore,
        fees: FeeOracle,
        broadcaster: Broadcaster,
        sender: TransactionSender,
        transfers: TransferPlanner,
    ) -> None:
        self._chain = chain
        self._name = chain.name
        self._store = store
        self._fees = fees
        self._broadcaster = broadcaster
        self._sender = sender
        self._transfers = transfers

    async def unstick(self, action: Action, stale: Tx) -> None:
        """Re-broadcast a transaction the node forgot; replace one it holds but won't mine."""
        known = (await self._broadcaster.known([stale.tx_hash]))[stale.tx_hash]
        if not known:
            log.warning("node forgot the transaction; re-broadcasting", tx_hash=stale.tx_hash)
            await self._broadcaster.send_raw(stale.raw)
            async with self._store.transaction() as work:
                await work.transactions.touch(stale.id)
            metrics.CHAIN_TRANSACTIONS.labels(self._name, stale.purpose.value, "rebroadcast").inc()
            return
        await self._replace(action, stale)

    async def _replace(self, action: Action, stale: Tx) -> None:
        market = await self._fees.fee_inputs()
        budget = 0
        if needs_budget(action, stale):
            async with self._store.transaction() as work:
                held = await work.funds.gas_credit(action, stale.signer)
                budget = (
                    topup_budget(await work.transactions.history(action.id))
                    if held is None
                    else held
                )
            try:  # the address pays the transfer's L1 data fee on top of its gas
                budget -= await self._transfers.l1_reserve(
                    transfer_tx(action, stale.gas_limit, stale.fees)
                )
            except L1FeeUnavailable:
                budget = 0  # no bound: no replacement is signed (below)
        cap = replacement_cap(self._chain.max_fee_per_gas, action, stale, max(budget, 0))
        plan = replacement_plan(action, stale, base_fee=market.base_fee, tip=market.tip, cap=cap)
        if plan is not None and plan.purpose is Purpose.TRANSFER:
            plan = await self._transfer(action, plan)
        if plan is None:
            log.warning("stuck transaction cannot be bumped further", tx_hash=stale.tx_hash)
            async with self._store.transaction() as work:
                await work.transactions.touch(stale.id)
            return
        kind, index = signer_of(action, stale.purpose)
        async with self._store.transaction() as work:
            if await work.actions.lock(action.id, ActionStatus.SUBMITTED) is None:
                return
            if not await work.transactions.set_status(
                stale.id, TxStatus.REPLACED, old=frozenset({TxStatus.SENT})
            ):
                return  # mined, replaced or dropped meanwhile: the next tick sees it
            recorded = await self._sender.record(work, action, plan, kind, index, nonce=stale.nonce)
        metrics.CHAIN_TRANSACTIONS.labels(self._name, stale.purpose.value, "replaced").inc()
        log.info("stuck transaction replaced", old=stale.tx_hash, new=recorded.tx_hash)
        await self._sender.after_record(recorded)

    async def _transfer(self, action: Action, bumped: TxPlan) -> TxPlan | None:
        """The replacement transfer at ``bumped``'s fees, planned as the first one is (a
        native sweep leaves the L1 data fee); None if there is no bound or nothing left."""
        try:
            return await self._transfers.transfer_plan(action, bumped.gas_limit, bumped.fees)
        except (AmountBelowGas, L1FeeUnavailable):
            return None
