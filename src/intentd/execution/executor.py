"""The executor of one chain: ready actions in, transactions out, results to the outbox.

Guarantees (see ``docs/execution.md``):

- A transaction is signed and recorded (nonce allocated, action ``submitted``) in
  one database transaction *before* it is broadcast. A crash before the broadcast
  leaves a ``signed`` row that the next tick (or the next process) broadcasts; a
  crash after it leaves a ``signed`` row whose bytes the node already has:
  re-sending them is harmless. New transactions are signed only for new work.
- Each tick reads every open nonce group's receipts; a group is final at the chain's
  confirmation depth. A stuck transaction is re-broadcast if the node forgot it, or
  else replaced by one with the same nonce and higher fees; whichever of them is
  mined wins, the others are dropped.
- Results (``sent`` once per action, then ``confirmed`` or ``failed``) go through the
  outbox in the transaction of the change they report.
- A prefill whose intent's deposits are above the source token's ``verify_above`` is
  signed only once a second provider confirms each of them; until then it stays
  ``ready``, unsigned, postponed with backoff (``execution.deposit_verifier``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from contextlib import AsyncExitStack
from dataclasses import dataclass

import structlog

from intentd import observability as metrics
from intentd.adapters import execution_store as store
from intentd.adapters.chain import JsonRpcClient, MissingResult, RpcError, RpcTransportError
from intentd.adapters.chain_writer import EstimateReverted, EvmChainWriter, FeeInputs, SendOutcome
from intentd.adapters.postgres import Pool, create_pool
from intentd.adapters.signer import Keyring, sign
from intentd.execution.deposit_check import retry_delay
from intentd.execution.deposit_verifier import DepositVerifier
from intentd.execution.gas import (
    NATIVE_TRANSFER_GAS,
    AmountBelowGas,
    FeeCapExceeded,
    Fees,
    affordable_fee,
    bumped_fees,
    gas_cost,
    gas_limit_with_margin,
    initial_fees,
)
from intentd.execution.leader import ExecutorLease
from intentd.execution.planning import (
    Action,
    Purpose,
    SignerKind,
    TxPlan,
    needs_topup,
    plan_topup,
    plan_transfer,
)
from intentd.execution.policy import GiveUp, RetryPolicy, after_failure
from intentd.execution.tracking import (
    OPEN_STATUSES,
    Consumed,
    Final,
    Included,
    Pending,
    Receipt,
    Tx,
    TxStatus,
    judge_group,
    next_transfer_due,
)
from intentd.faults import crash_point
from intentd.runtime import READINESS, Role
from intentd.settings import ChainConfig, ExecutionConfig, Settings

__all__ = ["Executor", "executor_role"]

log = structlog.get_logger()
_RPC_ERRORS = (RpcError, RpcTransportError, MissingResult)
FEE_WAIT = 5.0
"""Seconds an action waits when the fee market is above the chain's cap."""
BELOW_GAS_WAIT = 300.0
"""Seconds a native sweep waits when, at today's fees, its amount cannot pay its gas."""


@dataclass(frozen=True, slots=True)
class _Recorded:
    action: Action
    tx_id: int
    purpose: Purpose
    tx_hash: str
    raw: bytes


class Executor:
    """Performs the actions of one chain. The caller holds the chain's lease."""

    def __init__(
        self,
        chain: ChainConfig,
        config: ExecutionConfig,
        *,
        pool: Pool,
        writer: EvmChainWriter,
        keyring: Keyring,
        topic_prefix: str,
        verifier: DepositVerifier | None = None,
    ) -> None:
        self._chain = chain
        self._name = chain.name
        self._config = config
        self._pool = pool
        self._writer = writer
        self._keys = keyring
        self._prefix = topic_prefix
        self._policy = RetryPolicy(config.max_attempts, config.retry_backoff)
        self._reconciled: set[str] = set()
        self._verifier = verifier
        self._alerted: set[int] = set()
        """Prefills whose unconfirmed deposits were alerted on (once per process)."""

    async def run(self, stop: asyncio.Event, lease: ExecutorLease) -> None:
        """Work until ``stop``; a transaction in hand is recorded before returning."""
        wakeup = asyncio.Event()
        await lease.listen(wakeup)
        backoff = 0.0
        while not stop.is_set():
            await lease.check()
            wakeup.clear()
            try:
                await self.tick()
                backoff = 0.0
            except _RPC_ERRORS as exc:
                backoff = min(max(backoff * 2, 0.5), 10.0)
                log.warning("chain unavailable; retrying", error=str(exc), wait=backoff)
            await _wait_any(stop, wakeup, max(backoff, self._config.poll_interval))

    async def tick(self) -> None:
        """Start due actions, then advance every transaction in flight."""
        await self.start_ready()
        await self.track()

    # --- new work ----------------------------------------------------------------------

    async def start_ready(self) -> int:
        """Record and broadcast the first transaction of each due ready action."""
        started = 0
        fees: FeeInputs | None = None
        while True:
            async with self._pool.acquire() as conn, conn.transaction():
                action = await store.claim_ready(conn, self._name)
                if action is None:
                    return started
                with structlog.contextvars.bound_contextvars(
                    intent_id=action.intent_id, action_id=action.id
                ):
                    if not await self._deposits_confirmed(conn, action):
                        continue
                    fees = fees or await self._writer.fee_inputs()
                    recorded = await self._begin(conn, action, fees)
            if recorded is not None:
                started += 1
                await self._after_record(recorded)

    async def _deposits_confirmed(self, conn: store.Connection, action: Action) -> bool:
        """Whether the action may be signed: a prefill waits (postponed, with backoff)
        while the second provider does not confirm its intent's deposits."""
        if action.kind != "prefill" or self._verifier is None:
            return True
        reasons = await self._verifier.unconfirmed(conn, action.intent_id)
        if not reasons:
            return True
        waited = float(
            await conn.fetchval(
                "SELECT EXTRACT(EPOCH FROM now() - created_at)::float8 FROM actions WHERE id = $1",
                action.id,
            )
        )
        metrics.PREFILLS_UNCONFIRMED.labels(self._name).inc()
        error = "deposits not confirmed by the second provider: " + "; ".join(reasons)
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
        await store.postpone(conn, action.id, delay=retry_delay(waited), error=error)
        return False

    async def _begin(
        self, conn: store.Connection, action: Action, fees: FeeInputs
    ) -> _Recorded | None:
        """Plan, sign and record the action's first transaction (caller's transaction)."""
        sender = self._keys.address(action.signer_kind, action.signer_index)
        try:
            price = initial_fees(fees.base_fee, fees.tip, self._chain.max_fee_per_gas)
            if needs_topup(action):
                gas = await self._token_gas(action, sender)
                credit = await store.gas_credit(conn, action, sender) or 0
                plan = plan_topup(
                    sender, gas, price, headroom_bps=self._config.topup_headroom_bps, credit=credit
                )
                if plan is None:  # gas left there by earlier sweeps covers this one
                    recorded = await self._record(
                        conn,
                        action,
                        plan_transfer(action, gas, price),
                        action.signer_kind,
                        action.signer_index,
                    )
                else:
                    recorded = await self._record(conn, action, plan, SignerKind.GAS_TANK, None)
            else:
                gas = await self._transfer_gas(action, sender)
                plan = plan_transfer(action, gas, price)
                recorded = await self._record(
                    conn, action, plan, action.signer_kind, action.signer_index
                )
        except FeeCapExceeded as exc:
            log.warning("fees above the cap; action waits", error=str(exc))
            await store.postpone(conn, action.id, delay=FEE_WAIT, error=str(exc))
            return None
        except AmountBelowGas as exc:
            # Not a failure of the action (no alert): fees fell below the amount before
            # and will again; the lifecycle only creates sweeps above the token's min_sweep.
            log.warning("amount does not cover its gas at today's fees; waits", error=str(exc))
            metrics.ACTION_OUTCOMES.labels(self._name, action.kind, "below_gas").inc()
            await store.postpone(conn, action.id, delay=BELOW_GAS_WAIT, error=str(exc))
            return None
        except EstimateReverted as exc:
            await self._failed_attempt(conn, action, f"gas estimate reverted: {exc}")
            return None
        if not await store.set_action_status(conn, action.id, "ready", "submitted"):
            raise RuntimeError(f"action {action.id} changed under its row lock")
        return recorded

    async def _transfer_gas(self, action: Action, sender: str) -> int:
        if not action.native:
            return await self._token_gas(action, sender)
        if not await self._writer.has_code(action.to_address):
            return NATIVE_TRANSFER_GAS
        value = 0 if action.gas_from_amount else action.amount  # the sent value needs the gas
        estimate = await self._writer.estimate_gas(sender, action.to_address, value, b"")
        return gas_limit_with_margin(estimate)

    async def _token_gas(self, action: Action, sender: str) -> int:
        plan = plan_transfer(action, 0, Fees(1, 0))
        return gas_limit_with_margin(
            await self._writer.estimate_gas(sender, plan.to, plan.value, plan.data)
        )

    async def _record(
        self,
        conn: store.Connection,
        action: Action,
        plan: TxPlan,
        kind: SignerKind,
        index: int | None,
        *,
        nonce: int | None = None,
    ) -> _Recorded:
        """Sign ``plan`` with a newly allocated nonce (or ``nonce``) and record it."""
        signer = self._keys.address(kind, index)
        if nonce is None:
            await self._reconcile(signer)
            nonce = await store.allocate_nonce(conn, self._name, signer)
        signed = sign(
            plan,
            chain_id=self._chain.chain_id,
            nonce=nonce,
            private_key=self._keys.key(kind, index),
        )
        tx_id = await store.record_transaction(
            conn,
            store.NewTx(
                action_id=action.id,
                purpose=plan.purpose,
                chain=self._name,
                signer=signer,
                nonce=nonce,
                tx_hash=signed.tx_hash,
                raw=signed.raw,
                to=plan.to,
                value=plan.value,
                gas_limit=plan.gas_limit,
                fees=plan.fees,
            ),
        )
        log.info(
            "transaction recorded",
            tx_hash=signed.tx_hash,
            purpose=plan.purpose.value,
            signer=signer,
            nonce=nonce,
            max_fee_per_gas=plan.fees.max_fee_per_gas,
        )
        return _Recorded(action, tx_id, plan.purpose, signed.tx_hash, signed.raw)

    async def _reconcile(self, signer: str) -> None:
        """First use of a signer by this process: line its stored nonce up with the chain."""
        if signer in self._reconciled:
            return
        pending = (await self._writer.nonces([signer], "pending"))[signer]
        latest = (await self._writer.nonces([signer], "latest"))[signer]
        async with self._pool.acquire() as conn, conn.transaction():
            next_nonce = await store.reconcile_nonce(conn, self._name, signer, pending)
            holes = await store.open_nonce_holes(conn, self._name, signer, latest)
        if holes:
            metrics.NONCE_GAPS.labels(self._name).inc(holes)
            log.error("nonce gap: nonces with no transaction of ours", signer=signer, holes=holes)
        log.info("signer reconciled", signer=signer, next_nonce=next_nonce, chain_pending=pending)
        self._reconciled.add(signer)

    async def _after_record(self, recorded: _Recorded) -> None:
        crash_point("executor.after_record")
        await self._broadcast(
            recorded.action, recorded.tx_id, recorded.purpose, recorded.raw, recorded.tx_hash
        )

    # --- broadcasting ------------------------------------------------------------------

    async def _broadcast(
        self, action: Action, tx_id: int, purpose: Purpose, raw: bytes, tx_hash: str
    ) -> None:
        """Send recorded bytes; on acceptance mark the row ``sent`` (and report the
        action's first broadcast). A refusal leaves it ``signed`` for the next tick."""
        with structlog.contextvars.bound_contextvars(tx_hash=tx_hash, intent_id=action.intent_id):
            try:
                outcome, message = await self._writer.send_raw(raw)
            except RpcTransportError as exc:
                log.warning("broadcast got no answer; will retry", error=str(exc))
                return
            crash_point("executor.after_send")
            if outcome in (SendOutcome.ACCEPTED, SendOutcome.KNOWN):
                async with self._pool.acquire() as conn, conn.transaction():
                    await self._ensure_sent(conn, action, tx_id, purpose, tx_hash)
                metrics.CHAIN_TRANSACTIONS.labels(self._name, purpose.value, "sent").inc()
                log.info("transaction sent", outcome=outcome.value)
            elif outcome is SendOutcome.NONCE_TOO_LOW:
                log.info("nonce already used; receipts will tell by whom", error=message)
            else:
                metrics.SEND_REFUSALS.labels(self._name, outcome.value).inc()
                log.warning(
                    "node refused the transaction; will retry", error=message, reason=outcome.value
                )

    async def _ensure_sent(
        self, conn: store.Connection, action: Action, tx_id: int, purpose: Purpose, tx_hash: str
    ) -> None:
        """Mark ``signed`` → ``sent``; with the action's first transfer, enqueue ``sent``."""
        await conn.execute("SELECT 1 FROM actions WHERE id = $1 FOR UPDATE", action.id)
        first = purpose is Purpose.TRANSFER and not await store.first_transfer_sent(conn, action.id)
        if await store.mark_sent(conn, tx_id) and first:
            await store.enqueue_result(
                conn, self._prefix, store.result_message(action, "sent", tx_hash=tx_hash)
            )

    # --- tracking ----------------------------------------------------------------------

    async def track(self) -> None:
        """Advance every action in flight by what its receipts say."""
        async with self._pool.acquire() as conn:
            inflight = await store.submitted_actions(conn, self._name)
        if not inflight:
            return
        groups: dict[int, list[list[Tx]]] = {}
        for action, txs in inflight:
            grouped: dict[tuple[str, int], list[Tx]] = defaultdict(list)
            for tx in txs:
                if tx.status in OPEN_STATUSES:
                    grouped[(tx.signer, tx.nonce)].append(tx)
            groups[action.id] = list(grouped.values())
        open_txs = [tx for gs in groups.values() for g in gs for tx in g]
        signers = sorted({tx.signer for tx in open_txs})
        # A nonce counts as used by another transaction only at confirmation depth: a
        # shallower one may be reorged out, and ours (dropped, its action retried with a
        # new nonce) mined in its place. Nonces before receipts: a transaction mined in
        # between shows as mined, not consumed.
        head = await self._writer.head()
        deep = hex(max(head - self._chain.confirmations + 1, 0))
        mined_nonces = await self._writer.nonces(signers, deep) if signers else {}
        receipts = await self._writer.receipts([tx.tx_hash for tx in open_txs]) if open_txs else {}
        for action, txs in inflight:
            with structlog.contextvars.bound_contextvars(
                intent_id=action.intent_id, action_id=action.id
            ):
                if not groups[action.id]:
                    if next_transfer_due(txs):
                        await self._sign_transfer(action)
                    continue
                for group in groups[action.id]:
                    verdict = judge_group(
                        group,
                        receipts,
                        head=head,
                        confirmations=self._chain.confirmations,
                        mined_nonces=mined_nonces.get(group[0].signer),
                        stuck_after=self._config.stuck_after,
                    )
                    await self._apply(action, group, verdict)

    async def _apply(
        self, action: Action, group: list[Tx], verdict: Final | Included | Consumed | Pending
    ) -> None:
        match verdict:
            case Final(winner, receipt, losers):
                await self._finish(action, winner, receipt, losers)
            case Included(winner, receipt):
                if (
                    winner.status is not TxStatus.MINED
                    or winner.block_number != receipt.block_number
                ):
                    async with self._pool.acquire() as conn, conn.transaction():
                        await self._ensure_sent(
                            conn, action, winner.id, winner.purpose, winner.tx_hash
                        )
                        await store.set_tx_status(conn, winner.id, TxStatus.MINED, receipt=receipt)
                    log.info(
                        "transaction mined", tx_hash=winner.tx_hash, block=receipt.block_number
                    )
            case Consumed(txs):
                await self._consumed(action, txs)
            case Pending(unsent, unmined, stale, newest):
                if newest.status is TxStatus.SENT:
                    crash_point("executor.awaiting_receipt")
                for tx in unmined:
                    async with self._pool.acquire() as conn:
                        await store.set_tx_status(
                            conn, tx.id, TxStatus.SENT, old=frozenset({TxStatus.MINED})
                        )
                    log.warning("mined transaction left the chain (reorg)", tx_hash=tx.tx_hash)
                for tx in unsent:
                    await self._broadcast(action, tx.id, tx.purpose, tx.raw, tx.tx_hash)
                if stale is not None:
                    await self._unstick(action, stale)

    async def _finish(
        self, action: Action, winner: Tx, receipt: Receipt, losers: tuple[Tx, ...]
    ) -> None:
        """One transaction of a nonce is final: record it, drop its siblings, move on."""
        outcome = TxStatus.CONFIRMED if receipt.succeeded else TxStatus.REVERTED
        sign_transfer = False
        async with self._pool.acquire() as conn, conn.transaction():
            locked = await store.lock_action(conn, action.id, "submitted")
            if locked is None:
                return
            await self._ensure_sent(conn, action, winner.id, winner.purpose, winner.tx_hash)
            if not await store.set_tx_status(conn, winner.id, outcome, receipt=receipt):
                return
            for loser in losers:
                await store.set_tx_status(conn, loser.id, TxStatus.DROPPED)
            if not receipt.succeeded:
                await self._failed_attempt(conn, locked, f"transaction {winner.tx_hash} reverted")
            elif winner.purpose is Purpose.TRANSFER:
                amount_sent = winner.value if action.native else action.amount
                cost = gas_cost(receipt.gas_used, receipt.effective_gas_price, receipt.l1_fee)
                await store.confirm_action(
                    conn, action.id, tx_hash=winner.tx_hash, amount_sent=amount_sent, gas_cost=cost
                )
                await store.enqueue_result(
                    conn,
                    self._prefix,
                    store.result_message(
                        action,
                        "confirmed",
                        tx_hash=winner.tx_hash,
                        block_number=receipt.block_number,
                        amount_sent=amount_sent,
                        gas_cost=cost,
                    ),
                )
            else:
                sign_transfer = True
        metrics.CHAIN_TRANSACTIONS.labels(self._name, winner.purpose.value, outcome.value).inc()
        for loser in losers:
            metrics.CHAIN_TRANSACTIONS.labels(self._name, loser.purpose.value, "dropped").inc()
        log.info(
            "transaction final",
            tx_hash=winner.tx_hash,
            status=outcome.value,
            block=receipt.block_number,
            purpose=winner.purpose.value,
        )
        if receipt.succeeded and winner.purpose is Purpose.TRANSFER:
            metrics.ACTION_OUTCOMES.labels(self._name, action.kind, "confirmed").inc()
        if sign_transfer:
            await self._sign_transfer(action)

    async def _consumed(self, action: Action, txs: tuple[Tx, ...]) -> None:
        """Our nonce was used by a transaction that is not ours: this attempt failed."""
        async with self._pool.acquire() as conn, conn.transaction():
            locked = await store.lock_action(conn, action.id, "submitted")
            if locked is None:
                return
            for tx in txs:
                await store.set_tx_status(conn, tx.id, TxStatus.DROPPED)
            await self._failed_attempt(
                conn, locked, f"nonce {txs[0].nonce} of {txs[0].signer} used by another transaction"
            )
        self._reconciled.discard(txs[0].signer)
        for tx in txs:
            metrics.CHAIN_TRANSACTIONS.labels(self._name, tx.purpose.value, "dropped").inc()
        log.warning(
            "nonce consumed by another transaction", signer=txs[0].signer, nonce=txs[0].nonce
        )

    async def _failed_attempt(self, conn: store.Connection, action: Action, error: str) -> None:
        decision = after_failure(action.attempts, self._policy)
        if isinstance(decision, GiveUp):
            await self._give_up(conn, action, decision.attempts, error)
            return
        await store.retry_action(
            conn, action.id, attempts=decision.attempts, delay=decision.delay, error=error
        )
        metrics.ACTION_OUTCOMES.labels(self._name, action.kind, "retried").inc()
        log.warning(
            "attempt failed; retrying",
            error=error,
            attempts=decision.attempts,
            delay=decision.delay,
        )

    async def _give_up(
        self, conn: store.Connection, action: Action, attempts: int, error: str
    ) -> None:
        if await store.fail_action(conn, action.id, attempts=attempts, error=error):
            await store.enqueue_result(
                conn, self._prefix, store.result_message(action, "failed", error=error)
            )
            metrics.ACTION_OUTCOMES.labels(self._name, action.kind, "failed").inc()
            log.error("action failed", error=error, attempts=attempts)

    async def _unstick(self, action: Action, stale: Tx) -> None:
        """Re-broadcast a transaction the node forgot; replace one it holds but won't mine."""
        known = (await self._writer.known([stale.tx_hash]))[stale.tx_hash]
        if not known:
            log.warning("node forgot the transaction; re-broadcasting", tx_hash=stale.tx_hash)
            await self._writer.send_raw(stale.raw)
            async with self._pool.acquire() as conn:
                await store.touch(conn, stale.id)
            metrics.CHAIN_TRANSACTIONS.labels(self._name, stale.purpose.value, "rebroadcast").inc()
            return
        await self._replace(action, stale)

    async def _replace(self, action: Action, stale: Tx) -> None:
        market = await self._writer.fee_inputs()
        cap = self._chain.max_fee_per_gas
        if stale.purpose is Purpose.TRANSFER and needs_topup(action):
            async with self._pool.acquire() as conn:
                held = await store.gas_credit(conn, action, stale.signer)
                budget = (
                    _topup_budget(await store.history(conn, action.id)) if held is None else held
                )
            cap = min(cap, affordable_fee(budget, stale.gas_limit))
        fees = bumped_fees(stale.fees, market.base_fee, market.tip, cap)
        plan: TxPlan | None = None
        if fees is not None:
            if stale.purpose is Purpose.TRANSFER:
                with contextlib.suppress(AmountBelowGas):
                    plan = plan_transfer(action, stale.gas_limit, fees)
            else:
                plan = TxPlan(Purpose.GAS_TOPUP, stale.to, stale.value, b"", stale.gas_limit, fees)
        if plan is None:
            log.warning("stuck transaction cannot be bumped further", tx_hash=stale.tx_hash)
            async with self._pool.acquire() as conn:
                await store.touch(conn, stale.id)
            return
        kind, index = _signer_of(action, stale.purpose)
        async with self._pool.acquire() as conn, conn.transaction():
            if await store.lock_action(conn, action.id, "submitted") is None:
                return
            if not await store.set_tx_status(
                conn, stale.id, TxStatus.REPLACED, old=frozenset({TxStatus.SENT})
            ):
                return  # mined, replaced or dropped meanwhile: the next tick sees it
            recorded = await self._record(conn, action, plan, kind, index, nonce=stale.nonce)
        metrics.CHAIN_TRANSACTIONS.labels(self._name, stale.purpose.value, "replaced").inc()
        log.info("stuck transaction replaced", old=stale.tx_hash, new=recorded.tx_hash)
        await self._after_record(recorded)

    async def _sign_transfer(self, action: Action) -> None:
        """The gas top-up is confirmed: sign, record and send the transfer itself."""
        sender = self._keys.address(action.signer_kind, action.signer_index)
        market = await self._writer.fee_inputs()
        async with self._pool.acquire() as conn, conn.transaction():
            locked = await store.lock_action(conn, action.id, "submitted")
            if locked is None or not next_transfer_due(txs := await store.history(conn, action.id)):
                return
            try:
                gas = await self._token_gas(locked, sender)
                held = await store.gas_credit(conn, locked, sender)
                budget = _topup_budget(txs) if held is None else held
                cap = min(self._chain.max_fee_per_gas, affordable_fee(budget, gas))
                price = initial_fees(market.base_fee, market.tip, cap)
                plan = plan_transfer(locked, gas, price)
            except FeeCapExceeded as exc:
                log.warning("fees above what the top-up covers; transfer waits", error=str(exc))
                return
            except EstimateReverted as exc:
                await self._failed_attempt(conn, locked, f"gas estimate reverted: {exc}")
                return
            recorded = await self._record(
                conn, locked, plan, locked.signer_kind, locked.signer_index
            )
        await self._after_record(recorded)


def _topup_budget(history: list[Tx]) -> int:
    """Native coin the newest confirmed top-up brought (what the transfer may spend)."""
    for tx in reversed(history):
        if tx.purpose is Purpose.GAS_TOPUP and tx.status is TxStatus.CONFIRMED:
            return tx.value
    return 0


def _signer_of(action: Action, purpose: Purpose) -> tuple[SignerKind, int | None]:
    if purpose is Purpose.GAS_TOPUP:
        return SignerKind.GAS_TANK, None
    return action.signer_kind, action.signer_index


async def _wait_any(stop: asyncio.Event, wakeup: asyncio.Event, seconds: float) -> None:
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wakeup.wait())]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def executor_role(settings: Settings, chain: str, *, pool: Pool | None = None) -> Role:
    """The ``execute --chain NAME`` role. Keys are loaded (and the relayer key checked
    against the chain's ``relayer``) now, so a bad secret fails at start."""
    config = settings.chain(chain)
    keyring = Keyring.from_settings(settings)
    keyring.check_relayer(config)

    async def role(stop: asyncio.Event) -> None:
        ready_name = f"execute:{chain}"
        READINESS.expect(ready_name)
        with structlog.contextvars.bound_contextvars(chain=chain):
            async with AsyncExitStack() as resources:
                db = pool
                if db is None:
                    db = await create_pool(
                        settings.database.url.get_secret_value(), min_size=1, max_size=4
                    )
                    resources.push_async_callback(db.close)
                lease = ExecutorLease(db, chain)
                if not await lease.acquire(stop):
                    return
                resources.push_async_callback(lease.release)
                metrics.EXECUTOR_ACTIVE.labels(chain).set(1)
                resources.callback(metrics.EXECUTOR_ACTIVE.labels(chain).set, 0)
                urls, timeout, chain_id = config.rpc_urls, config.rpc_timeout, config.chain_id
                writer = EvmChainWriter(
                    JsonRpcClient(chain, urls, timeout=timeout, chain_id=chain_id),
                    JsonRpcClient(chain, urls, timeout=timeout, attempts=1, chain_id=chain_id),
                )
                resources.push_async_callback(writer.close)
                verifier = DepositVerifier.from_settings(settings)  # None: no thresholds
                if verifier is not None:
                    resources.push_async_callback(verifier.close)
                executor = Executor(
                    config,
                    settings.execution,
                    pool=db,
                    writer=writer,
                    keyring=keyring,
                    topic_prefix=settings.kafka.topic_prefix,
                    verifier=verifier,
                )
                READINESS.ready(ready_name)
                started = time.monotonic()
                await executor.run(stop, lease)
                log.info("executor stopped", seconds=round(time.monotonic() - started, 1))

    return role
