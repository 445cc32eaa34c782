"""New work: the first transaction of each due ready action, and the transfer that
follows a confirmed gas top-up.

Guarantees:

- A ready action is claimed (row lock), planned, signed, recorded and moved
  ``ready → submitted`` in one store transaction; it is broadcast only after that
  commits (``execution.sending``).
- A prefill whose intent's deposits are above the source token's ``verify_above`` is
  signed only once a second provider confirms each of them; until then it stays
  ``ready``, unsigned, postponed with backoff (``execution.deposit_verifier``), and one
  operator alert per process is raised once it waited ``unconfirmed_alert_after``.
- A fee market above the chain's cap, or a native sweep whose amount does not cover
  its gas at today's fees, postpones the action without counting an attempt; a gas
  estimate that reverts is a failed attempt (``execution.endings``).
- A native sweep on an ``op_stack`` chain leaves the oracle's L1 data fee bound plus
  ``l1_fee_margin_bps`` at the address (``execution.transfer_planner``); without a
  bound it is not signed and waits, postponed without counting an attempt
  (``adapters.evm.l1_fee``).
- An ERC-20 transfer from an intent address is preceded by a gas top-up from the gas
  tank, less what the tank's credit at the address already covers; the transfer is
  signed once the top-up is confirmed, with fees its budget affords.
- A prefill is signed only when the relayer can pay it (amount and gas) on top of its
  prefills in flight; otherwise it waits for a refill, then fails
  (``execution.prefill_funds``).
"""

from __future__ import annotations

import structlog

from intentd import observability as metrics
from intentd.domain.actions import Action, ActionKind, ActionStatus, SignerKind
from intentd.domain.wait_codes import WaitCode, wait_error
from intentd.execution.deposit_check import retry_delay
from intentd.execution.deposit_verifier import DepositVerifier
from intentd.execution.endings import failed_attempt
from intentd.execution.gas import (
    NATIVE_TRANSFER_GAS,
    AmountBelowGas,
    FeeCapExceeded,
    Fees,
    affordable_fee,
    gas_limit_with_margin,
    initial_fees,
)
from intentd.execution.policy import RetryPolicy
from intentd.execution.ports import (
    EstimateReverted,
    ExecutionStore,
    FeeInputs,
    FeeOracle,
    Keyring,
    L1FeeUnavailable,
    NodeReader,
    StoreTransaction,
)
from intentd.execution.prefill_funds import PrefillFunds
from intentd.execution.replacement import topup_budget
from intentd.execution.sending import Recorded, TransactionSender
from intentd.execution.tracking import next_transfer_due
from intentd.execution.transfer_planner import TransferPlanner
from intentd.execution.tx_plans import needs_topup, transfer_tx
from intentd.settings import ChainConfig, ExecutionConfig

__all__ = ["BELOW_GAS_WAIT", "FEE_WAIT", "L1_FEE_WAIT", "Starter"]

log = structlog.get_logger()
FEE_WAIT = 5.0
"""Seconds an action waits when the fee market is above the chain's cap."""
BELOW_GAS_WAIT = 300.0
"""Seconds a native sweep waits when, at today's fees, its amount cannot pay its gas."""
L1_FEE_WAIT = 30.0
"""Seconds a native sweep waits when the OP-stack oracle gives no L1 data fee bound."""


class Starter:
    """Starts the ready actions of one chain."""

    def __init__(
        self,
        chain: ChainConfig,
        config: ExecutionConfig,
        *,
        store: ExecutionStore,
        reader: NodeReader,
        fees: FeeOracle,
        keyring: Keyring,
        sender: TransactionSender,
        transfers: TransferPlanner,
        funds: PrefillFunds,
        verifier: DepositVerifier | None = None,
    ) -> None:
        self._chain = chain
        self._funds = funds
        self._name = chain.name
        self._config = config
        self._store = store
        self._reader = reader
        self._fees = fees
        self._keys = keyring
        self._sender = sender
        self._transfers = transfers
        self._verifier = verifier
        self._policy = RetryPolicy(config.max_attempts, config.retry_backoff)
        self._alerted: set[int] = set()
        """Prefills whose unconfirmed deposits were alerted on (once per process)."""

    async def start_ready(self) -> int:
        """Record and broadcast the first transaction of each due ready action."""
        started = 0
        fees: FeeInputs | None = None
        while True:
            async with self._store.transaction() as work:
                action = await work.actions.claim_ready()
                if action is None:
                    return started
                with structlog.contextvars.bound_contextvars(
                    intent_id=action.intent_id, action_id=action.id
                ):
                    if not await self._deposits_confirmed(work, action):
                        continue
                    fees = fees or await self._fees.fee_inputs()
                    recorded = await self._begin(work, action, fees)
            if recorded is not None:
                started += 1
                await self._sender.after_record(recorded)

    async def _deposits_confirmed(self, work: StoreTransaction, action: Action) -> bool:
        """Whether the action may be signed: a prefill waits (postponed, with backoff)
        while the second provider does not confirm its intent's deposits."""
        if action.kind is not ActionKind.PREFILL or self._verifier is None:
            return True
        reasons = await self._verifier.unconfirmed(work.deposits, action.intent_id)
        if not reasons:
            return True
        waited = await work.actions.age(action.id)
        metrics.PREFILLS_UNCONFIRMED.labels(self._name).inc()
        error = wait_error(
            WaitCode.SECOND_PROVIDER,
            "deposits not confirmed by the second provider: " + "; ".join(reasons),
        )
        if waited >= self._config.unconfirmed_alert_after and action.id not in self._alerted:
            self._alerted.add(action.id)
            metrics.PREFILLS_UNCONFIRMED_OVERDUE.labels(self._name).inc()
            log.error(
                "a prefill's deposits are still not confirmed by the second provider;"
                " the prefill stays unsent; operator action needed",
                reasons=reasons,
                waited=round(waited),
            )
        else:
            log.warning("prefill waits for its deposits' confirmation", reasons=reasons)
        await work.actions.postpone(action.id, delay=retry_delay(waited), error=error)
        return False

    async def _begin(
        self, work: StoreTransaction, action: Action, fees: FeeInputs
    ) -> Recorded | None:
        """Plan, sign and record the action's first transaction (caller's transaction)."""
        sender = self._keys.address(action.signer_kind, action.signer_index)
        record = self._sender.record
        try:
            price = initial_fees(fees.base_fee, fees.tip, self._chain.max_fee_per_gas)
            if needs_topup(action):
                gas = await self._token_gas(action, sender)
                credit = await work.funds.gas_credit(action, sender) or 0
                plan = await self._transfers.topup_plan(
                    action,
                    sender,
                    gas,
                    price,
                    headroom_bps=self._config.topup_headroom_bps,
                    credit=credit,
                )
                if plan is None:  # gas left there by earlier sweeps covers this one
                    transfer = transfer_tx(action, gas, price)
                    kind, index = action.signer_kind, action.signer_index
                    recorded = await record(work, action, transfer, kind, index)
                else:
                    recorded = await record(work, action, plan, SignerKind.GAS_TANK, None)
            else:
                funds = self._funds
                reading = None
                if action.kind is ActionKind.PREFILL:  # before the estimate: it reverts if short
                    reading = await funds.read(work, action)
                    if reading is None or not await funds.enough(work, action, reading):
                        return None
                gas = await self._transfer_gas(action, sender)
                plan = await self._transfers.transfer_plan(action, gas, price)
                cost = plan.gas_limit * plan.fees.max_fee_per_gas
                if reading is not None and not await funds.enough(work, action, reading, gas=cost):
                    return None
                kind, index = action.signer_kind, action.signer_index
                recorded = await record(work, action, plan, kind, index)
        except FeeCapExceeded as exc:
            log.warning("fees above the cap; action waits", error=str(exc))
            error = wait_error(WaitCode.FEE_CAP, str(exc))
            await work.actions.postpone(action.id, delay=FEE_WAIT, error=error)
            return None
        except AmountBelowGas as exc:
            # Not a failure of the action (no alert): fees fell below the amount before
            # and will again; the lifecycle only creates sweeps above the token's min_sweep.
            log.warning("amount does not cover its gas at today's fees; waits", error=str(exc))
            metrics.ACTION_OUTCOMES.labels(self._name, action.kind, "below_gas").inc()
            error = wait_error(WaitCode.BELOW_GAS, str(exc))
            await work.actions.postpone(action.id, delay=BELOW_GAS_WAIT, error=error)
            return None
        except L1FeeUnavailable as exc:  # never sign what op-geth would refuse forever
            log.warning("L1 data fee unknown; the sweep waits", error=str(exc))
            metrics.ACTION_OUTCOMES.labels(self._name, action.kind, "l1_fee_unknown").inc()
            error = wait_error(WaitCode.L1_FEE_UNKNOWN, str(exc))
            await work.actions.postpone(action.id, delay=L1_FEE_WAIT, error=error)
            return None
        except EstimateReverted as exc:
            await self._failed(work, action, f"gas estimate reverted: {exc}")
            return None
        if not await work.actions.set_status(action.id, ActionStatus.READY, ActionStatus.SUBMITTED):
            raise RuntimeError(f"action {action.id} changed under its row lock")
        return recorded

    async def _transfer_gas(self, action: Action, sender: str) -> int:
        if not action.native:
            return await self._token_gas(action, sender)
        if not await self._reader.has_code(action.to_address):
            return NATIVE_TRANSFER_GAS
        value = 0 if action.gas_from_amount else action.amount  # the sent value needs the gas
        estimate = await self._fees.estimate_gas(sender, action.to_address, value, b"")
        return gas_limit_with_margin(estimate)

    async def _token_gas(self, action: Action, sender: str) -> int:
        plan = transfer_tx(action, 0, Fees(1, 0))
        return gas_limit_with_margin(
            await self._fees.estimate_gas(sender, plan.to, plan.value, plan.data)
        )

    async def _failed(self, work: StoreTransaction, action: Action, error: str) -> None:
        await failed_attempt(work, action, error, policy=self._policy, chain=self._name)

    async def sign_transfer(self, action: Action) -> None:
        """The gas top-up is confirmed: sign, record and send the transfer itself."""
        sender = self._keys.address(action.signer_kind, action.signer_index)
        market = await self._fees.fee_inputs()
        async with self._store.transaction() as work:
            locked = await work.actions.lock(action.id, ActionStatus.SUBMITTED)
            if locked is None or not next_transfer_due(
                txs := await work.transactions.history(action.id)
            ):
                return
            try:
                gas = await self._token_gas(locked, sender)
                held = await work.funds.gas_credit(locked, sender)
                budget = topup_budget(txs) if held is None else held
                chain_cap = self._chain.max_fee_per_gas
                probe = transfer_tx(
                    locked, gas, initial_fees(market.base_fee, market.tip, chain_cap)
                )
                budget -= await self._transfers.l1_reserve(probe)  # the L1 fee is paid on top
                cap = min(chain_cap, affordable_fee(max(budget, 0), gas))
                price = initial_fees(market.base_fee, market.tip, max(cap, 1))
                plan = transfer_tx(locked, gas, price)
            except FeeCapExceeded as exc:
                log.warning("fees above what the top-up covers; transfer waits", error=str(exc))
                return
            except L1FeeUnavailable as exc:
                log.warning("L1 data fee unknown; transfer waits", error=str(exc))
                metrics.ACTION_OUTCOMES.labels(self._name, locked.kind, "l1_fee_unknown").inc()
                return
            except EstimateReverted as exc:
                await self._failed(work, locked, f"gas estimate reverted: {exc}")
                return
            kind, index = locked.signer_kind, locked.signer_index
            recorded = await self._sender.record(work, locked, plan, kind, index)
        await self._sender.after_record(recorded)
