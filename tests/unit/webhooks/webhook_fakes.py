"""In-memory fakes of the webhooks role's ports."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from uuid import UUID

from intentd.webhooks.fairness import Candidate, fair_share
from intentd.webhooks.ports import Attempt, DueDelivery, EventToRecord, RecordedAttempt
from intentd.webhooks.schedule import Decision


@dataclass
class FakeStore:
    pending: list[tuple[datetime, DueDelivery]] = field(default_factory=list)
    attempts: list[tuple[DueDelivery, Attempt, Decision]] = field(default_factory=list)
    recorded: list[EventToRecord] = field(default_factory=list)
    busy_seen: list[dict[UUID, int]] = field(default_factory=list)
    """The ``busy`` of each claim."""

    async def record_events(self, events: Sequence[EventToRecord]) -> int:
        self.recorded.extend(events)
        return len(events)

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
        """The fair share of what is due (the per-endpoint limit is not modelled)."""
        self.busy_seen.append(dict(busy))
        due = {d.id: (at, d) for at, d in self.pending if at <= now}
        picked = fair_share(
            (Candidate(d.id, d.endpoint_id, d.client_id, at) for at, d in due.values()),
            limit=limit,
            per_client=per_client,
            busy=busy,
        )
        chosen = [due[c.delivery_id][1] for c in picked]
        self.pending = [(at, d) for at, d in self.pending if d not in chosen]
        return chosen

    def unavailable(self, exc: BaseException) -> bool:
        """As PostgreSQL's: refused, reset, no answer in time."""
        return isinstance(exc, OSError | TimeoutError)

    async def record_attempts(self, attempts: Sequence[RecordedAttempt]) -> None:
        for r in attempts:
            self.attempts.append((r.delivery, r.attempt, r.decision))
            if r.decision.next_attempt_at is not None:
                again = replace(r.delivery, round_attempts=r.delivery.round_attempts + 1)
                self.pending.append((r.decision.next_attempt_at, again))


@dataclass
class FakeSender:
    answer: Callable[[str], Attempt]
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    sent: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)

    async def send(self, url: str, headers: dict[str, str], body: bytes) -> Attempt:
        gate = self.gates.get(url)
        if gate is not None:
            await gate.wait()
        self.sent.append((url, headers, body))
        return self.answer(url)


@dataclass(frozen=True)
class FakeRecord:
    topic: str
    partition: int
    offset: int
    value: bytes | None


@dataclass
class FakeFeed:
    """Hands out ``batches`` one per read, then sets ``stop``; records the commits."""

    batches: list[dict[int, list[FakeRecord]]]
    stop: asyncio.Event
    commits: list[dict[int, int]] = field(default_factory=list)

    async def getmany(self, *, timeout_ms: int, max_records: int) -> Mapping[int, list[FakeRecord]]:
        if not self.batches:
            self.stop.set()
            return {}
        return self.batches.pop(0)

    async def commit(self, positions: Mapping[int, int]) -> bool:
        self.commits.append(dict(positions))
        return True
