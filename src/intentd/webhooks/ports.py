"""What the webhooks role needs from the outside world, as small protocols.

The adapters implement them (``adapters.postgres.webhook_store.PostgresWebhookStore``,
``adapters.http.webhook_sender.HttpSender``, ``adapters.kafka.webhook_feed.KafkaEventFeed``); the
unit tests use in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from intentd.contract.mode import Mode
from intentd.webhooks.schedule import Decision

__all__ = [
    "Attempt",
    "DeliverySender",
    "DueDelivery",
    "EventFeed",
    "EventToRecord",
    "FedRecord",
    "RecordedAttempt",
    "WebhookStore",
    "WebhooksHealth",
    "WebhooksUpkeep",
]


@dataclass(frozen=True, slots=True)
class EventToRecord:
    """An event from Kafka, ready to be matched and recorded."""

    event_id: str
    event_type: str
    client_id: UUID
    mode: Mode
    intent_id: int | None
    sequence: int
    created_at: datetime
    body: bytes
    """The exact bytes every attempt sends (signed as they are)."""


@dataclass(frozen=True, slots=True)
class DueDelivery:
    """A claimed delivery: leased to this process until its attempt is recorded."""

    id: int
    endpoint_id: UUID
    client_id: UUID
    """The endpoint's client (its fair share is counted per client)."""
    url: str
    event_id: str
    body: bytes
    sealed_secrets: tuple[bytes, ...]
    """The endpoint's valid secrets, sealed (``SecretBox``), newest first."""
    round_attempts: int
    """Attempts made since it was (re)scheduled, not counting the one about to be made."""
    failing_since: datetime | None


@dataclass(frozen=True, slots=True)
class Attempt:
    """How one HTTP attempt went."""

    status: int | None
    """The answer's status, None if there was no answer (timeout, refused, reset)."""
    latency: float
    """Seconds from the start of the request to the end of the (capped) answer."""
    error: str | None = None
    response_head: str = ""
    """The first 4 KiB of the answer, decoded leniently."""
    retry_after: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedAttempt:
    """An attempt made and what the schedule decided after it, to be stored."""

    delivery: DueDelivery
    attempt: Attempt
    decision: Decision
    at: datetime


class DeliverySender(Protocol):
    async def send(self, url: str, headers: dict[str, str], body: bytes) -> Attempt:
        """POST ``body``; never raises for what the endpoint or the network does."""
        ...


class WebhookStore(Protocol):
    async def record_events(self, events: Sequence[EventToRecord]) -> int:
        """Record one delivery per matching endpoint of each event (unique per event
        and endpoint: recording again is a no-op), in one transaction; return how many
        deliveries were new. Returns only once they are durable."""
        ...

    async def claim_due(
        self,
        now: datetime,
        limit: int,
        per_endpoint: int,
        lease: timedelta,
        *,
        per_client: int,
        busy: Mapping[UUID, int],
    ) -> list[DueDelivery]:
        """Lease up to ``limit`` deliveries due at ``now`` until ``now + lease``: at most
        ``per_endpoint`` in flight per endpoint (counting other processes' leases), and
        the fair share per client of :func:`webhooks.fairness.fair_share` (at most
        ``per_client`` of a client in flight here, ``busy`` counting those running,
        least loaded clients first, in turn). A delivery never attempted waits for the
        intent's earlier ones to the same endpoint. Two processes never claim the same
        delivery at once."""
        ...

    async def record_attempts(self, attempts: Sequence[RecordedAttempt]) -> None:
        """Store the attempts and apply each decision to its delivery and endpoint
        (failing since, disabled), releasing the leases, in one transaction."""
        ...

    def unavailable(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised by one of these methods, means the store could not be
        reached or did not answer (an outage, told as such), not a fault of the call."""
        ...


class FedRecord(Protocol):
    """What the intake reads of a record of the events topic."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def value(self) -> bytes | None: ...


class EventFeed(Protocol):
    """The intents' public events (a Kafka group consumer with auto-commit off)."""

    async def getmany(
        self, *, timeout_ms: int, max_records: int
    ) -> Mapping[Any, Sequence[FedRecord]]:
        """The next records per partition; nothing once the role is stopping."""
        ...

    async def commit(self, positions: Mapping[Any, int]) -> object:
        """Commit the next offset to read per partition (a commit lost to a rebalance
        is no error: the new owner replays the tail, which records nothing new)."""
        ...


class WebhooksHealth(Protocol):
    """What the health gauges show."""

    @property
    def pending(self) -> int: ...
    @property
    def oldest_seconds(self) -> float: ...
    @property
    def disabled_endpoints(self) -> int: ...


class WebhooksUpkeep(Protocol):
    async def health(self, now: datetime) -> WebhooksHealth:
        """The deliveries pending, the age of the oldest, the endpoints disabled."""
        ...

    async def prune(self, before: datetime) -> int:
        """Forget deliveries that ended before ``before``; how many went."""
        ...
