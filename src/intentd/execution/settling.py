"""Transactions in flight: read the chain, judge each nonce group, apply the verdict.

Guarantees:

- Each tick reads a head, then, in one request answered by one node
  (``NodeReader.view``), that node's head, every open signer's transaction count at
  the newest block at confirmation depth, and the receipts of every open transaction
  (in packs that fit one request; a group is judged from the view that carried its
  receipts and its signer's count). A view from a node below that block, or showing a
  receipt above its own head, decides nothing this tick (``execution.evidence``).
- A group is final at the chain's confirmation depth: the winner ``confirmed`` (the
  action confirmed, the ``confirmed`` result in the outbox) or ``reverted`` (a failed
  attempt), the others ``dropped``, all in one store transaction under the action's
  row lock (compare-and-set: done once even if two executors run).
- Mined above depth: recorded ``mined`` and waited on; a reorg that takes it out sends
  it back to ``sent`` (the same bytes go out again when it is stuck).
- The nonce used at depth and no receipt of ours read: an absent receipt is no
  evidence. The transaction that used the nonce is looked for in a block
  (``NodeReader.nonce_use``). Ours: final once its receipt is read with the block.
  Another one: the group is ``dropped``, the attempt failed (its hash and block in
  the error), the signer reconciled again before its next nonce. Not found, or the
  answers disagree: nothing is decided, signed, replaced or re-broadcast for the
  group (``intentd_settle_undecided_total``, each tick); the next tick looks again. A
  foreign transaction above depth may still be reorged out for ours: not acted on.
- A proof read (a view, the search for a nonce's use) that takes longer than
  ``execution.proof_timeout`` (a hung provider) decides nothing: the group waits, as
  for an unproven nonce; it is never taken as consumed.
- A group waiting for proof, and views that disagree with themselves, are logged in a
  few lines however many ticks they last (``supervision.episodes``): one when the wait
  starts, a summary every 30 s, one when the group is decided (or leaves the flight).
- Signed, never sent (a crash between record and broadcast): broadcast, never signed
  anew. A confirmed gas top-up is followed by the transfer (``execution.starting``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from intentd import observability as metrics
from intentd.chain.errors import ChainUnavailable
from intentd.domain.actions import Action, ActionStatus, ResultEvent
from intentd.execution.endings import failed_attempt, result_message, transfer_figures
from intentd.execution.evidence import ChainView, pack_groups, view_problem
from intentd.execution.policy import RetryPolicy
from intentd.execution.ports import Broadcaster, ExecutionStore, FeeOracle, NodeReader
from intentd.execution.sending import TransactionSender
from intentd.execution.starting import Starter
from intentd.execution.tracking import (
    Consumed,
    Final,
    Included,
    NonceUse,
    Pending,
    Receipt,
    Tx,
    TxStatus,
    Unexplained,
    Verdict,
    depth_block,
    judge_group,
    judge_use,
    newly_included,
    next_transfer_due,
    nonce_groups,
)
from intentd.execution.transfer_planner import TransferPlanner
from intentd.execution.tx_plans import Purpose
from intentd.execution.unsticking import Unsticker
from intentd.faults import crash_point
from intentd.settings import ChainConfig, ExecutionConfig
from intentd.supervision.episodes import Episodes, Wording
from intentd.supervision.outage_log import emit

__all__ = ["Settler"]

log = structlog.get_logger()

WAITING = Wording(
    begun="nonce used with no receipt of ours and no proof of who used it; waiting, nothing signed",
    lasting="nonce still unproven; waiting, nothing signed",
    ended="nonce group decided",
)
"""The lines of a nonce group that waits for proof of who used its nonce."""
TORN_VIEWS = Wording(
    begun="chain view inconsistent; no verdict this tick",
    lasting="chain views still inconsistent; no verdicts",
    ended="chain views consistent again",
)
"""The lines of the node's views disagreeing with themselves, tick after tick."""
_TIMED_OUT = "no answer within execution.proof_timeout"


class Settler:
    """Advances the transactions in flight of one chain."""

    def __init__(
        self,
        chain: ChainConfig,
        config: ExecutionConfig,
        *,
        store: ExecutionStore,
        reader: NodeReader,
        fees: FeeOracle,
        broadcaster: Broadcaster,
        sender: TransactionSender,
        starter: Starter,
        transfers: TransferPlanner,
    ) -> None:
        self._chain = chain
        self._name = chain.name
        self._config = config
        self._store = store
        self._reader = reader
        self._sender = sender
        self._starter = starter
        self._unsticker = Unsticker(
            chain,
            store=store,
            fees=fees,
            broadcaster=broadcaster,
            sender=sender,
            transfers=transfers,
        )
        self._policy = RetryPolicy(config.max_attempts, config.retry_backoff)
        self._waits: Episodes[tuple[str, int]] = Episodes(WAITING)
        self._torn: Episodes[str] = Episodes(TORN_VIEWS)

    async def track(self) -> None:
        """Advance every action in flight by what one node's view of the chain proves."""
        async with self._store.transaction() as work:
            inflight = await work.actions.submitted()
        self._forget_gone(inflight)
        if not inflight:
            return
        for action, txs in inflight:
            if not nonce_groups(txs) and next_transfer_due(txs):
                with structlog.contextvars.bound_contextvars(
                    intent_id=action.intent_id, action_id=action.id
                ):
                    await self._starter.sign_transfer(action)
        grouped = [(action, group) for action, txs in inflight for group in nonce_groups(txs)]
        if not grouped:
            return
        # A nonce counts as used by another transaction only at confirmation depth: a
        # shallower one may be reorged out, and ours (dropped, its action retried with a
        # new nonce) mined in its place.
        deep = depth_block(await self._reader.head(), self._chain.confirmations)
        for pack in pack_groups(grouped, self._reader.view_size):
            signers = sorted({group[0].signer for _, group in pack})
            hashes = [tx.tx_hash for _, group in pack for tx in group]
            view = await self._view(signers, hashes, deep)
            problem = _TIMED_OUT if view is None else view_problem(view, asked=deep)
            if view is None or problem is not None:
                metrics.SETTLE_UNDECIDED.labels(self._name, "view").inc()
                emit(self._torn.seen(self._name, problem=problem))
                continue
            emit(self._torn.ended(self._name))
            for action, group in pack:
                with structlog.contextvars.bound_contextvars(
                    intent_id=action.intent_id, action_id=action.id
                ):
                    verdict = judge_group(
                        group,
                        view.receipts,
                        head=view.head,
                        confirmations=self._chain.confirmations,
                        mined_nonces=view.nonces.get(group[0].signer),
                        stuck_after=self._config.stuck_after,
                    )
                    if isinstance(verdict, Unexplained):
                        verdict = await self._prove(verdict, view, deep)
                    if not isinstance(verdict, Unexplained):
                        key = (group[0].signer, group[0].nonce)
                        emit(self._waits.ended(key, verdict=type(verdict).__name__.lower()))
                    await self._apply(action, verdict)

    async def _view(self, signers: list[str], hashes: list[str], deep: int) -> ChainView | None:
        """One node's view, or None when none came within ``execution.proof_timeout``."""
        try:
            async with asyncio.timeout(self._config.proof_timeout):
                return await self._reader.view(signers, hashes, deep)
        except TimeoutError:
            return None

    def _forget_gone(self, inflight: Sequence[tuple[Action, Sequence[Tx]]]) -> None:
        """End the waits of groups no longer in flight (decided elsewhere: another
        executor, or the action moved on)."""
        if len(self._waits):
            groups = nonce_groups([tx for _, txs in inflight for tx in txs])
            open_keys = [(group[0].signer, group[0].nonce) for group in groups]
            for line in self._waits.keep(open_keys, verdict="no longer in flight"):
                emit(line)

    async def _prove(self, unexplained: Unexplained, view: ChainView, deep: int) -> Verdict:
        """Look for the transaction that used the group's nonce and judge on what is found."""
        first = unexplained.txs[0]
        ours = [tx.tx_hash for tx in unexplained.txs]
        try:
            async with asyncio.timeout(self._config.proof_timeout):
                use = await self._reader.nonce_use(first.signer, first.nonce, deep, ours)
        except ChainUnavailable as exc:
            return Unexplained(unexplained.txs, f"looking for the nonce's transaction: {exc}")
        except TimeoutError:
            waited = f"no answer within {self._config.proof_timeout} s (execution.proof_timeout)"
            return Unexplained(unexplained.txs, waited)
        return judge_use(
            unexplained.txs, use, head=view.head, confirmations=self._chain.confirmations
        )

    async def _apply(self, action: Action, verdict: Verdict) -> None:
        match verdict:
            case Final(winner, receipt, losers):
                await self._finish(action, winner, receipt, losers)
            case Included(winner, receipt):
                if newly_included(winner, receipt):
                    async with self._store.transaction() as work:
                        await self._sender.ensure_sent(
                            work, action, winner.id, winner.purpose, winner.tx_hash
                        )
                        await work.transactions.set_status(
                            winner.id, TxStatus.MINED, receipt=receipt
                        )
                    log.info(
                        "transaction mined", tx_hash=winner.tx_hash, block=receipt.block_number
                    )
            case Consumed(txs, use):
                await self._consumed(action, txs, use)
            case Unexplained(txs, reason):
                metrics.SETTLE_UNDECIDED.labels(self._name, "nonce_unproven").inc()
                signer, nonce = txs[0].signer, txs[0].nonce
                emit(self._waits.seen((signer, nonce), signer=signer, nonce=nonce, reason=reason))
            case Pending(unsent, unmined, stale, newest):
                if newest.status is TxStatus.SENT:
                    crash_point("executor.awaiting_receipt")
                for tx in unmined:
                    async with self._store.transaction() as work:
                        await work.transactions.set_status(
                            tx.id, TxStatus.SENT, old=frozenset({TxStatus.MINED})
                        )
                    log.warning("mined transaction left the chain (reorg)", tx_hash=tx.tx_hash)
                for tx in unsent:
                    await self._sender.broadcast(action, tx.id, tx.purpose, tx.raw, tx.tx_hash)
                if stale is not None:
                    await self._unsticker.unstick(action, stale)

    async def _finish(
        self, action: Action, winner: Tx, receipt: Receipt, losers: tuple[Tx, ...]
    ) -> None:
        """One transaction of a nonce is final: record it, drop its siblings, move on."""
        outcome = TxStatus.CONFIRMED if receipt.succeeded else TxStatus.REVERTED
        sign_transfer = False
        async with self._store.transaction() as work:
            locked = await work.actions.lock(action.id, ActionStatus.SUBMITTED)
            if locked is None:
                return
            await self._sender.ensure_sent(work, action, winner.id, winner.purpose, winner.tx_hash)
            if not await work.transactions.set_status(winner.id, outcome, receipt=receipt):
                return
            for loser in losers:
                await work.transactions.set_status(loser.id, TxStatus.DROPPED)
            if not receipt.succeeded:
                error = f"transaction {winner.tx_hash} reverted"
                await failed_attempt(work, locked, error, policy=self._policy, chain=self._name)
            elif winner.purpose is Purpose.TRANSFER:
                amount_sent, cost = transfer_figures(action, winner, receipt)
                await work.actions.confirm(
                    action.id, tx_hash=winner.tx_hash, amount_sent=amount_sent, gas_cost=cost
                )
                await work.results.add(
                    result_message(
                        action,
                        ResultEvent.CONFIRMED,
                        tx_hash=winner.tx_hash,
                        block_number=receipt.block_number,
                        amount_sent=amount_sent,
                        gas_cost=cost,
                    )
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
            await self._starter.sign_transfer(action)

    async def _consumed(self, action: Action, txs: tuple[Tx, ...], use: NonceUse) -> None:
        """Our nonce was used by a transaction that is not ours (``use``, found in a block
        at depth): this attempt failed."""
        first = txs[0]
        async with self._store.transaction() as work:
            locked = await work.actions.lock(action.id, ActionStatus.SUBMITTED)
            if locked is None:
                return
            for tx in txs:
                await work.transactions.set_status(tx.id, TxStatus.DROPPED)
            error = (
                f"nonce {first.nonce} of {first.signer} used by another transaction:"
                f" {use.tx_hash} in block {use.block_number} ({use.block_hash})"
            )
            await failed_attempt(work, locked, error, policy=self._policy, chain=self._name)
        self._sender.forget(first.signer)
        for tx in txs:
            metrics.CHAIN_TRANSACTIONS.labels(self._name, tx.purpose.value, "dropped").inc()
        log.warning(
            "nonce consumed by another transaction",
            signer=first.signer,
            nonce=first.nonce,
            by=use.tx_hash,
            block=use.block_number,
        )
