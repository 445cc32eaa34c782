"""Recover what a gap in a consumed log skipped, from the source of truth.

A gap (:mod:`intentd.lifecycle.log_gaps`) is recovered before the consumer reads on,
and :meth:`LogGapRecovery.recover` returns only once the recovery is durable. It never
raises (a raise would end the lifecycle and crash-loop ``intentd run``): a failed
attempt (a node down or answering from two forks, the database away, a bug) is
counted (``failed``), logged at error (the database or the chain's RPC not answering
is reported instead as part of that dependency's outage, ``supervision.report``: a
few lines however long it lasts) and retried with backoff up to ``retry_cap`` seconds,
until it succeeds or the caller cancels it (a stop). If it is cut short, the group's
position stays where it was and the gap is found, and recovered, again at the next
read (a crash halfway does the same: every step is idempotent).

- ``<prefix>.deposits.<CHAIN>``: the deposits are re-derived from the chain. The
  blocks from :func:`~intentd.lifecycle.log_gaps.rescan_from` (the block of the last
  chain message the partition applied, less the reorg window) to the poller's cursor
  (nothing above it was published) are read with the poller's own decoding
  (``chain.evm.range_deposits.scan_range``) for every intent address, and each deposit
  found is credited (``lifecycle.crediting.credit``; both through
  ``scanning.service.ScanCredits.sweep``: once per identity, so the ones already
  credited change nothing; one it refuses as ``Unappliable``, a re-mined transaction
  making another transfer, goes to ``<prefix>.dlq`` with its reason as on
  the consumer's path). After each chunk, its last block is recorded as the
  partition's applied block, so a recovery cut short (a rebalance after
  ``max.poll.interval.ms``, a stop, a crash) resumes from there. A retraction in the
  gap is re-derived by handing every deposit recorded in those blocks to the trigger verifier
  (``scanning.trigger_verifier``, ``uow.watches.watch``), which retracts or relocates
  one whose block a reorg orphaned and lets go of the others once final. Not
  re-derived: native coin that reached an address only through a contract (the
  poller's balance reconciliation). A partition with no block recorded cannot be
  bounded: the attempt fails with :class:`UnboundedGap`, logged at error every
  ``retry_cap`` seconds, until an operator records the block to rescan from
  (docs/runbook.md); the lifecycle consumer reads nothing meanwhile.
- ``<prefix>.action-results``: the results are outbox rows (written with the
  action's status change); the ones still kept (published within the relay's
  ``keep_days``) are published again, and applying a result is idempotent.
- any other topic: nothing to re-derive from here; logged at error.

A partition with no committed position (:attr:`LogGap.uncommitted`) is a gap only if
it is a deposits partition with an applied block recorded (the group's offsets
expired, or ``kafka.lifecycle_group`` was renamed): it is counted in
``intentd_kafka_offset_out_of_range_total`` and rescanned as above.
Otherwise it is a new group's, which reads from the log start and recovers nothing
(also an action-results partition whose group lost its offsets: nothing records
that it had one).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import orjson
import structlog

from intentd import observability as metrics
from intentd.backoff import Backoff
from intentd.chain.blocks import BlockRange
from intentd.domain.deposits import Deposit
from intentd.lifecycle import failures
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import SEEN_BEFORE
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.log_gaps import LogGap, rescan_from
from intentd.lifecycle.outcomes import Unappliable
from intentd.lifecycle.ports import DeadLetters, LogPositions, Rates, Store, VerifierChains
from intentd.messages import OutgoingMessage, action_results_topic, deposits_topic, dlq_topic
from intentd.scanning.service import ScanCredits
from intentd.settings import Settings
from intentd.supervision import POSTGRESQL, report, rpc

__all__ = ["LogGapRecovery", "UnboundedGap"]

log = structlog.get_logger()


class UnboundedGap(Exception):
    """A deposits partition lost records, but no applied block bounds the rescan."""


class LogGapRecovery:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        positions: LogPositions,
        chains: VerifierChains,
        dead_letters: DeadLetters,
        *,
        book: ChainBook,
        reorg_window: int,
        retry_base: float = 1.0,
        retry_cap: float = 60.0,
        rates: Rates | None = None,
    ) -> None:
        self._settings = settings
        self._credits = ScanCredits(settings, store, book=book, valuer=rates)
        self._dead_letters = dead_letters
        self._dlq = dlq_topic(settings.kafka.topic_prefix)
        self._backoff = Backoff(retry_base, cap=retry_cap)
        self._store = store
        self._positions = positions
        self._chains = chains
        self._window = reorg_window
        prefix = settings.kafka.topic_prefix
        self._chain_of = {deposits_topic(prefix, chain): chain for chain in settings.chains}
        self._results = action_results_topic(prefix)

    async def recover(self, gap: LogGap) -> None:
        """Recover what ``gap`` skipped, durably; retried until it is (see the module)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                outcome = await self._recover_once(gap)
            except UnboundedGap as exc:
                log.error(  # noqa: TRY400 (the message says it all; no traceback each minute)
                    "log gap cannot be recovered; operator action needed", error=str(exc)
                )
                delay = self._backoff.cap
            except Exception as exc:
                chain = self._chain_of.get(gap.topic)
                if self._store.classify(exc) is Failure.UNAVAILABLE:
                    report(POSTGRESQL, exc)  # told as the database's outage
                elif chain is not None and self._chains.failed_read(exc):
                    report(rpc(chain), exc)  # told as the chain's RPC outage
                else:
                    log.exception(
                        "log gap recovery failed; retrying",
                        topic=gap.topic,
                        partition=gap.partition,
                        attempt=attempt,
                        error=repr(exc),
                    )
                delay = self._backoff.delay(attempt)
            else:
                if outcome is not None:
                    metrics.LOG_GAP_RECOVERIES.labels(gap.topic, outcome).inc()
                return
            metrics.LOG_GAP_RECOVERIES.labels(gap.topic, "failed").inc()
            await asyncio.sleep(delay)

    async def _recover_once(self, gap: LogGap) -> str | None:
        chain = self._chain_of.get(gap.topic)
        if gap.uncommitted:
            if chain is None or not await self._applied_before(gap):
                log.info("no committed position; a new group reads from the log start")
                return None
            metrics.KAFKA_OFFSET_OUT_OF_RANGE.labels(gap.topic, str(gap.partition)).inc()
            log.error(
                "kafka committed position lost; recovering what was skipped",
                topic=gap.topic,
                partition=gap.partition,
                log_start=gap.log_start,
            )
        if chain is not None:
            await self._rescan(chain, gap)
            return "rescanned"
        if gap.topic == self._results:
            replayed = await self._positions.replay_outbox(gap.topic)
            log.warning("action results published again from the outbox", rows=replayed)
            return "replayed"
        log.error("nothing to recover a gap of this topic from", topic=gap.topic)
        return "unrecoverable"

    async def _applied_before(self, gap: LogGap) -> bool:
        return await self._positions.applied_block(gap.topic, gap.partition) is not None

    async def _rescan(self, chain: str, gap: LogGap) -> None:
        last = await self._positions.applied_block(gap.topic, gap.partition)
        if last is None:
            raise UnboundedGap(
                f"{gap.topic}:{gap.partition}: records {gap.position}..{gap.log_start - 1}"
                " were deleted unread and no applied block bounds a rescan; record one"
                " in log_positions (docs/runbook.md, IntentdKafkaPositionOutsideLog)"
            )
        cursor = await self._positions.poller_cursor(chain)
        first = rescan_from(last, reorg_window=self._window)
        if cursor is None or cursor < first:
            log.warning("nothing published past the applied block; nothing to rescan")
            return
        config = self._settings.chains[chain]
        reader = self._chains.reader(config)
        addresses = await self._positions.intent_addresses()

        async def refused(deposit: Deposit, exc: Unappliable) -> None:
            await self._dead_letter(gap, deposit, exc)

        found = credited = watched = 0
        sweep = self._credits.sweep(
            config, reader, BlockRange(first, cursor), addresses,
            now=lambda: datetime.now(UTC), refused=refused,
        )  # fmt: skip
        async for swept in sweep:
            blocks = swept.blocks
            found += len(swept.credited)
            credited += sum(
                c.outcome is not None and c.outcome not in SEEN_BEFORE for c in swept.credited
            )
            recorded = await self._positions.recorded_deposits(chain, blocks.first, blocks.last)
            async with self._store.unit() as uow, uow.transaction():
                for key in recorded:  # a reorg in the gap: the verifier retracts what it orphaned
                    await uow.watches.watch(key, reopen=False)
            watched += len(recorded)
            if blocks.last > last:  # a repeat resumes here (less the reorg window)
                await self._positions.record_applied_block(gap.topic, gap.partition, blocks.last)
        log.warning(
            "deposits rescanned after a gap",
            chain=chain,
            from_block=first,
            to_block=cursor,
            found=found,
            credited=credited,
            watched=watched,
        )

    async def _dead_letter(self, gap: LogGap, deposit: Deposit, exc: Unappliable) -> None:
        """A deposit refused as ``Unappliable`` goes to the dead-letter topic with its
        reason (the consumer's ``error:`` reason)."""
        reason = failures.reason(Failure.PERMANENT, exc)
        key = str(deposit.key)
        body = {
            "reason": reason,
            "topic": gap.topic,
            "partition": gap.partition,
            "offset": None,  # not read from Kafka: found by the rescan
            "key": key,
            "value": orjson.dumps(deposit, default=str).decode(),
        }
        await self._dead_letters.publish(
            OutgoingMessage(
                self._dlq,
                key=key,
                value=orjson.dumps(body),
                headers=(("reason", reason[:500].encode()),),
            )
        )
        metrics.DEAD_LETTERS.labels(gap.topic, failures.reason_code(reason)).inc()
        log.warning("rescanned deposit sent to dead-letter topic", deposit=key, reason=reason)
