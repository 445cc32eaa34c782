"""Signing, recording and broadcasting one transaction of an action.

Guarantees:

- A transaction is signed with a nonce allocated in the store transaction that records
  it (status ``signed``, with its raw bytes); nothing is broadcast before that
  transaction commits. The caller commits, then calls :meth:`TransactionSender.after_record`.
- The first time this process uses a signer, its stored next nonce is lined up with
  the chain (pending count, and past every nonce recorded), and nonces below it with
  no open transaction of ours are reported as gaps: counted from the signer's count at
  the highest head seen, read from a node at or past it (a lagging node's low count is
  no gap; a node below it decides nothing, and the check is made at the next nonce).
- A broadcast the node accepts, or already knows, marks the row ``sent`` and, with
  the action's first transfer, puts the ``sent`` result in the outbox in the same
  store transaction (under the action's row lock: once per action). A refusal or no
  answer leaves the row ``signed``: the next tick broadcasts the same bytes again,
  which is harmless. "Nonce too low" is left to the settler: ours mined, or another
  transaction proven in a block (``execution.settling``); it is never read as either.
- Reconciling a signer never lowers its next nonce: it is the highest of the stored
  one, the chain's pending count and every recorded nonce + 1, so a node that lags
  (a low pending count) cannot make a used nonce be handed out again.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from intentd import observability as metrics
from intentd.chain.errors import ChainUnavailable, NoAnswer
from intentd.domain.actions import Action, ResultEvent, SignerKind
from intentd.execution.endings import result_message
from intentd.execution.evidence import view_problem
from intentd.execution.ports import (
    Broadcaster,
    ExecutionStore,
    Keyring,
    NodeReader,
    SendOutcome,
    StoreTransaction,
)
from intentd.execution.repositories import NewTx
from intentd.execution.tx_plans import Purpose, TxPlan
from intentd.faults import crash_point
from intentd.settings import ChainConfig

__all__ = ["Recorded", "TransactionSender"]

log = structlog.get_logger()


@dataclass(frozen=True, slots=True)
class Recorded:
    """A transaction recorded (committed) and not yet broadcast by this process."""

    action: Action
    tx_id: int
    purpose: Purpose
    tx_hash: str
    raw: bytes


class TransactionSender:
    """Signs, records and broadcasts the transactions of one chain's actions."""

    def __init__(
        self,
        chain: ChainConfig,
        *,
        store: ExecutionStore,
        reader: NodeReader,
        broadcaster: Broadcaster,
        keyring: Keyring,
    ) -> None:
        self._chain = chain
        self._name = chain.name
        self._store = store
        self._reader = reader
        self._broadcaster = broadcaster
        self._keys = keyring
        self._reconciled: set[str] = set()
        self._gaps_checked: set[str] = set()

    async def record(
        self,
        work: StoreTransaction,
        action: Action,
        plan: TxPlan,
        kind: SignerKind,
        index: int | None,
        *,
        nonce: int | None = None,
    ) -> Recorded:
        """Sign ``plan`` with a newly allocated nonce (or ``nonce``) and record it in
        ``work``; broadcast it with :meth:`after_record` once ``work`` is committed."""
        signer = self._keys.address(kind, index)
        if nonce is None:
            await self._reconcile(signer)
            nonce = await work.nonces.allocate(signer)
        signed = self._keys.sign(plan, kind, index, chain_id=self._chain.chain_id, nonce=nonce)
        tx_id = await work.transactions.record(
            NewTx(
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
            )
        )
        log.info(
            "transaction recorded",
            tx_hash=signed.tx_hash,
            purpose=plan.purpose.value,
            signer=signer,
            nonce=nonce,
            max_fee_per_gas=plan.fees.max_fee_per_gas,
        )
        return Recorded(action, tx_id, plan.purpose, signed.tx_hash, signed.raw)

    def forget(self, signer: str) -> None:
        """Reconcile ``signer`` again before its next nonce (another transaction used one)."""
        self._reconciled.discard(signer)
        self._gaps_checked.discard(signer)

    async def _reconcile(self, signer: str) -> None:
        """First use of a signer by this process: line its stored nonce up with the chain
        (and, until done, look for nonce gaps)."""
        if signer not in self._reconciled:
            pending = (await self._reader.nonces([signer], "pending"))[signer]
            async with self._store.transaction() as work:
                next_nonce = await work.nonces.reconcile(signer, pending)
            log.info(
                "signer reconciled", signer=signer, next_nonce=next_nonce, chain_pending=pending
            )
            self._reconciled.add(signer)
        if signer not in self._gaps_checked:
            await self._check_gaps(signer)

    async def _check_gaps(self, signer: str) -> None:
        """Nonces below the next one with no transaction of ours, counted from the
        signer's count at the highest head seen, as a node at or past it answers; a node
        below it (or no answer) decides nothing: looked at again at the next nonce."""
        height = self._reader.seen_head or await self._reader.head()
        try:
            view = await self._reader.view([signer], [], height)
        except ChainUnavailable as exc:
            log.info("nonce gaps not checked; later", signer=signer, error=str(exc))
            return
        problem = view_problem(view, asked=height)
        if problem is not None:
            log.info("nonce gaps not checked; later", signer=signer, problem=problem)
            return
        async with self._store.transaction() as work:
            holes = await work.nonces.open_holes(signer, view.nonces[signer])
        if holes:
            metrics.NONCE_GAPS.labels(self._name).inc(holes)
            log.error("nonce gap: nonces with no transaction of ours", signer=signer, holes=holes)
        self._gaps_checked.add(signer)

    async def after_record(self, recorded: Recorded) -> None:
        crash_point("executor.after_record")
        await self.broadcast(
            recorded.action, recorded.tx_id, recorded.purpose, recorded.raw, recorded.tx_hash
        )

    async def broadcast(
        self, action: Action, tx_id: int, purpose: Purpose, raw: bytes, tx_hash: str
    ) -> None:
        """Send recorded bytes; on acceptance mark the row ``sent`` (and report the
        action's first broadcast). A refusal leaves it ``signed`` for the next tick."""
        with structlog.contextvars.bound_contextvars(tx_hash=tx_hash, intent_id=action.intent_id):
            try:
                outcome, message = await self._broadcaster.send_raw(raw)
            except NoAnswer as exc:
                log.warning("broadcast got no answer; will retry", error=str(exc))
                return
            crash_point("executor.after_send")
            if outcome in (SendOutcome.ACCEPTED, SendOutcome.KNOWN):
                async with self._store.transaction() as work:
                    await self.ensure_sent(work, action, tx_id, purpose, tx_hash)
                metrics.CHAIN_TRANSACTIONS.labels(self._name, purpose.value, "sent").inc()
                log.info("transaction sent", outcome=outcome.value)
            elif outcome is SendOutcome.NONCE_TOO_LOW:
                log.info("nonce already used; the settler will prove by whom", error=message)
            else:
                metrics.SEND_REFUSALS.labels(self._name, outcome.value).inc()
                log.warning(
                    "node refused the transaction; will retry", error=message, reason=outcome.value
                )

    async def ensure_sent(
        self, work: StoreTransaction, action: Action, tx_id: int, purpose: Purpose, tx_hash: str
    ) -> None:
        """Mark ``signed`` → ``sent``; with the action's first transfer, enqueue ``sent``."""
        await work.actions.lock_row(action.id)
        first = purpose is Purpose.TRANSFER and not await work.transactions.first_transfer_sent(
            action.id
        )
        if await work.transactions.mark_sent(tx_id) and first:
            await work.results.add(result_message(action, ResultEvent.SENT, tx_hash=tx_hash))
