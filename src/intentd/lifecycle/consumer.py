"""The lifecycle role: consume chain messages and action results, apply them, expire
intents on time, relay the outbox.

Delivery contract (DESIGN.md §3): auto-commit is off; a partition's offset is
committed only after every message up to it was applied in a committed database
transaction or sent to the dead-letter topic (the send awaited and acknowledged).
A crash anywhere replays at most the uncommitted tail, which the handlers apply
idempotently. Before a deposits partition's offset is committed, the block of the last
chain message applied from it is recorded (:class:`~intentd.lifecycle.ports.LogPositions`;
retried like a message while the database fails, never skipped), which bounds the
rescan if retention deletes records of it before they are read
(:mod:`intentd.scanning.gap_recovery`).

No message stops the role. A message goes to ``<prefix>.dlq`` with its reason and
origin, and processing goes on with the next one, when it cannot be parsed, when a
chain message's chain does not match its topic and the configuration, when an
action result disagrees with what the executor recorded
(:mod:`intentd.lifecycle.admission`), or when applying it raises: at once for an
error that would only repeat, after bounded retries with backoff for a transaction
that kept losing to others (:mod:`intentd.lifecycle.failures`; the store classifies).
A message is never dead-lettered because the database did not answer: while it does
not, the consumer waits for it, committing nothing past the message in hand; if it
answers and yet applying the message keeps failing for want of a connection, the
consumer keeps trying (with a growing pause), never skipping it: an action result
skipped would leave its intent stuck. Each such failure is reported as part of the
database's outage (``supervision.report``), not logged on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
import structlog

from intentd import observability as metrics
from intentd import wire
from intentd.faults import crash_point
from intentd.lifecycle import admission, failures
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.handlers import apply_action_result
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.ports import (
    DeadLetters,
    Inbox,
    InboxRecord,
    LogPositions,
    OutgoingMessage,
    Rates,
    Store,
    UnitOfWork,
)
from intentd.lifecycle.retractions import retract
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    RetractionMessage,
    action_results_topic,
    decode_action_result,
    decode_chain_message,
    deposits_topic,
    dlq_topic,
)
from intentd.settings import Settings
from intentd.supervision import POSTGRESQL, progress, report
from intentd.wait import Stopped

log = structlog.get_logger()
_PROBE_SECONDS = 2.0
"""How long the database may take to answer ``SELECT 1`` before it counts as down."""

Message = DepositMessage | RetractionMessage | ActionResultMessage


@dataclass(frozen=True, slots=True)
class _DeadLetter:
    reason: str


class LifecycleConsumer:
    """Applies the deposit topics of every configured chain to the store."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        publisher: DeadLetters,
        *,
        book: ChainBook,
        positions: LogPositions | None = None,
        retry_base: float = 0.05,
        rates: Rates | None = None,
    ) -> None:
        self.book = book
        self._rates = rates
        self._positions = positions
        self._applied_block: int | None = None
        self._store = store
        self._publisher = publisher
        self._retry_base = retry_base
        self._round_base = retry_base * 20  # between two rounds of attempts: 1 s by default
        self._stop = asyncio.Event()
        prefix = settings.kafka.topic_prefix
        self._prefix = prefix
        self._results = action_results_topic(prefix)
        self.topics = [deposits_topic(prefix, chain) for chain in settings.chains]
        self.topics.append(self._results)
        self._dlq = dlq_topic(prefix)

    async def run(self, consumer: Inbox, stop: asyncio.Event) -> None:
        """Consume until ``stop``; the batch in hand is finished and committed first
        (if the database is down meanwhile, only what was settled is committed)."""
        self._stop = stop
        with contextlib.suppress(Stopped):
            await self._consume(consumer, stop)

    async def _consume(self, consumer: Inbox, stop: asyncio.Event) -> None:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            progress()
            for tp, records in batches.items():
                settled: int | None = None
                block: int | None = None
                try:
                    for record in records:
                        self._applied_block = None
                        await self.handle(record)
                        settled = record.offset + 1
                        block = self._applied_block if self._applied_block is not None else block
                finally:
                    if settled is not None:
                        crash_point("lifecycle.after_db_commit")
                        if block is not None:
                            await self._record_applied(
                                records[0].topic, records[0].partition, block
                            )
                        await consumer.commit({tp: settled})

    async def _record_applied(self, topic: str, partition: int, block: int) -> None:
        """Record ``block`` as the partition's applied block, retrying (never skipped: it
        bounds a gap's rescan) until it is durable; raises :class:`Stopped` if stopped
        first, or what :mod:`failures` calls permanent (a bug)."""
        if self._positions is None:
            return
        attempt = 0
        while True:
            attempt += 1
            try:
                await self._positions.record_applied_block(topic, partition, block)
            except Exception as exc:
                failure = self._store.classify(exc)
                if failure is Failure.PERMANENT:
                    raise
                self._transient(failure, exc, "recording the applied block", attempt=attempt,
                                topic=topic, partition=partition)  # fmt: skip
            else:
                return
            if attempt < failures.ATTEMPTS:
                await asyncio.sleep(failures.backoff(attempt, base=self._retry_base))
                continue
            if not await self._database_answers():
                await self._wait_for_database()
            elif self._stop.is_set():
                raise Stopped("stopped before the applied block was recorded")
            attempt = 0

    async def handle(self, record: InboxRecord) -> Outcome | None:
        """Apply one record; None if it went to the dead-letter topic (sent and
        acknowledged). Raises :class:`Stopped` if stopped while the database is down."""
        message: Message
        try:
            if record.topic == self._results:
                message = decode_action_result(record.value or b"")
            else:
                message = decode_chain_message(record.value or b"")
        except ValueError as exc:
            await self._dead_letter(record, str(exc))
            return None
        if not isinstance(message, ActionResultMessage):
            refused = admission.refusal(message, record.topic, self._prefix, self.book.chains)
            if refused is not None:
                await self._dead_letter(record, refused)
                return None
        started = time.perf_counter()
        outcome = await self._apply_guarded(message)
        if isinstance(outcome, _DeadLetter):
            await self._dead_letter(record, outcome.reason)
            return None
        if not isinstance(message, ActionResultMessage):
            self._applied_block = message.block_number
        metrics.HANDLE_SECONDS.labels(message.kind).observe(time.perf_counter() - started)
        metrics.MESSAGES.labels(message.kind, outcome.value).inc()
        log.debug(
            "message applied", message_id=message.id, kind=message.kind, outcome=outcome.value
        )
        return outcome

    async def _apply_guarded(self, message: Message) -> Outcome | _DeadLetter:
        """Apply ``message``, retrying what :mod:`failures` calls transient; never raises
        but :class:`Stopped`."""
        attempt = rounds = 0
        while True:
            attempt += 1
            try:
                async with self._store.unit() as uow:
                    return await self._apply(uow, message)
            except admission.MessageRefused as exc:
                return _DeadLetter(str(exc))
            except Exception as exc:
                failure = self._store.classify(exc)
                if failure is Failure.PERMANENT:
                    log.exception(
                        "message cannot be applied; sending it to the dead-letter topic",
                        message_id=message.id,
                        error=repr(exc),
                    )
                    return _DeadLetter(failures.reason(failure, exc))
                self._transient(failure, exc, "applying a message", attempt=attempt,
                                message_id=message.id)  # fmt: skip
                if attempt < failures.ATTEMPTS:
                    await asyncio.sleep(failures.backoff(attempt, base=self._retry_base))
                    continue
                if failure is Failure.CONTENTION:
                    return _DeadLetter(failures.reason(failure, exc))
                # Unavailable: never dead-lettered (that would skip the message).
                if not await self._database_answers():
                    await self._wait_for_database()
                else:
                    rounds += 1
                    if rounds == 1:
                        log.warning(
                            "applying a message fails for want of a connection although the"
                            " database answers; trying again, never skipping it",
                            message_id=message.id,
                            error=repr(exc),
                        )
                    await self._pause(failures.backoff(rounds, base=self._round_base, cap=30))
                attempt = 0

    async def _database_answers(self) -> bool:
        try:
            async with asyncio.timeout(_PROBE_SECONDS):
                await self._store.ping()
        except Exception as exc:
            if self._store.classify(exc) is Failure.PERMANENT:
                raise
            return False
        return True

    def _transient(self, failure: Failure, exc: Exception, doing: str, **fields: object) -> None:
        """One failure to retry: part of the database's outage if it is unavailable (the
        process's health tells the outage in a few lines), else a line of its own."""
        if failure is Failure.UNAVAILABLE:
            report(POSTGRESQL, exc)
            log.debug(f"the database is unavailable {doing}; retrying", error=repr(exc), **fields)
        else:
            log.warning(f"transient database error {doing}; retrying", error=repr(exc), **fields)

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``; raise :class:`Stopped` if stopped first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        if self._stop.is_set():
            raise Stopped("stopped while a message waited to be applied")

    async def _wait_for_database(self) -> None:
        """Return once the database answers; raise :class:`Stopped` if stopped first."""
        log.debug("the database does not answer; waiting for it before going on")
        waits = 0
        while True:
            waits += 1
            await self._pause(failures.backoff(waits, base=self._retry_base))
            if await self._database_answers():
                log.debug("the database answers again")
                return

    async def _apply(self, uow: UnitOfWork, message: Message) -> Outcome:
        now = datetime.now(UTC)
        if isinstance(message, DepositMessage):
            return await credit(uow, self.book, wire.deposit(message), now=now, valuer=self._rates)
        if isinstance(message, RetractionMessage):
            return await retract(uow, self.book, wire.retraction(message), now=now)
        evidence = await uow.actions.facts(message.action_id, message.tx_hash)
        refused = admission.result_refusal(message, evidence)
        if refused is not None:
            raise admission.MessageRefused(refused)
        return await apply_action_result(uow, self.book, wire.action_result(message), now=now)

    async def _dead_letter(self, record: InboxRecord, reason: str) -> None:
        body = {
            "reason": reason,
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "key": (record.key or b"").decode("utf-8", "replace"),
            "value": (record.value or b"").decode("utf-8", "replace"),
        }
        await self._publisher.publish(
            OutgoingMessage(
                self._dlq,
                key=(record.key or b"").decode("utf-8", "replace"),
                value=orjson.dumps(body),
                headers=(("reason", reason[:500].encode()),),
            )
        )
        metrics.DEAD_LETTERS.labels(record.topic, failures.reason_code(reason)).inc()
        log.warning(
            "message sent to dead-letter topic",
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            reason=reason,
        )


__all__ = ["LifecycleConsumer", "Stopped"]
