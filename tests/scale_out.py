"""Helpers of the scale-out tests: group members as subprocesses, when a rebalance
among them is over (read from their ``kafka partitions assigned`` log lines), and a
steady flow of messages that lasts until the moment the test waits for."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer

from intentd.messages import deposits_topic
from intentd.settings import Settings
from tests.broker_tansu import TOPIC_NAMES, create_topics
from tests.support import daemon_env, start_daemon

SESSION_TIMEOUT_MS = 2_000
HEARTBEAT_INTERVAL_MS = 300


async def on_tansu(base: Settings, bootstrap: str) -> Settings:
    """`base` with topics of its own, created on the Tansu at `bootstrap`."""
    prefix = f"s{secrets.token_hex(4)}"
    kafka = base.kafka.model_copy(
        update={
            "bootstrap_servers": bootstrap,
            "topic_prefix": prefix,
            "lifecycle_group": f"{prefix}-lifecycle",
            "idempotent_producer": False,
        }
    )
    topics = [deposits_topic(prefix, chain) for chain in base.chains]
    await create_topics(bootstrap, [*topics, *(f"{prefix}.{name}" for name in TOPIC_NAMES)])
    return base.model_copy(update={"kafka": kafka})


def tansu_env(settings: Settings, bootstrap: str, **extra: str) -> dict[str, str]:
    """`daemon_env` pointed at Tansu, with short group timings and no idempotence."""
    return daemon_env(
        settings,
        INTENTD_KAFKA_BOOTSTRAP=bootstrap,
        INTENTD__KAFKA__BOOTSTRAP_SERVERS=bootstrap,
        INTENTD__KAFKA__IDEMPOTENT_PRODUCER="false",
        INTENTD__KAFKA__SESSION_TIMEOUT_MS=str(SESSION_TIMEOUT_MS),
        INTENTD__KAFKA__HEARTBEAT_INTERVAL_MS=str(HEARTBEAT_INTERVAL_MS),
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
        **extra,
    )


@dataclass
class Member:
    """One ``intentd ROLE`` process of a consumer group."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    killed_at: float | None = None

    @property
    def alive(self) -> bool:
        return self.killed_at is None and self.process.poll() is None

    def assignments(self) -> list[tuple[float, frozenset[str]]]:
        """(wall-clock time, partitions) of every assignment this member logged."""
        found = []
        for line in self.log.read_bytes().splitlines():
            if b"kafka partitions assigned" not in line:
                continue
            record = orjson.loads(line)
            stamp = datetime.fromisoformat(record["timestamp"]).timestamp()
            found.append((stamp, frozenset(record["partitions"])))
        return found

    def kill(self) -> float:
        """``kill -9``: no revocation, no LeaveGroup; the group learns by the session timeout."""
        killed_at = self.killed_at = time.time()
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        return killed_at


@dataclass
class Group:
    role: str
    env: dict[str, str]
    logs: Path
    partitions: frozenset[str]
    members: list[Member] = field(default_factory=list)

    def add(self, name: str) -> Member:
        log = self.logs / f"{name}.log"
        member = Member(name, start_daemon([self.role], self.env, log), log)
        self.members.append(member)
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive]

    def settled_since(self, since: float) -> float | None:
        """When every live member had an assignment logged after `since` and those
        latest assignments split all the partitions among them; None if not yet."""
        latest = []
        for member in self.live():
            after = [(t, parts) for t, parts in member.assignments() if t >= since]
            if not after or not after[-1][1]:
                return None
            latest.append(after[-1])
        union = frozenset().union(*(parts for _, parts in latest))
        if union != self.partitions or sum(len(p) for _, p in latest) != len(self.partitions):
            return None
        return max(t for t, _ in latest)

    async def rebalance(self, since: float, timeout: float = 60.0) -> float:
        """Wait until the group settles after `since`; the seconds it took (a member that
        starts on a loaded machine may take 30 s to import, join and be assigned)."""
        deadline = time.monotonic() + timeout
        while (settled := self.settled_since(since)) is None:
            for member in self.live():
                assert member.process.poll() is None, member.log.read_text()[-3000:]
            if time.monotonic() > deadline:
                tails = {m.name: m.assignments()[-2:] for m in self.members}
                raise AssertionError(f"{self.role} group did not settle: {tails}")
            await asyncio.sleep(0.05)
        return settled - since

    def print_figures(self, title: str, figures: dict[str, float]) -> None:
        print(f"\n{title} (seconds):")
        for name, value in figures.items():
            print(f"  {name}: {value:.2f}")

    async def stop(self) -> dict[str, int]:
        """SIGTERM to the live members; their exit statuses (0: a clean stop)."""
        stopped = self.live()
        for member in stopped:
            member.process.terminate()
        for member in self.members:
            try:
                await asyncio.to_thread(member.process.wait, 30)
            except subprocess.TimeoutExpired:
                member.process.kill()
                raise
        return {member.name: member.process.returncode for member in stopped}


@dataclass(frozen=True)
class Message:
    """One message of a flow; `ident` names it in the test's checks (an event id, a tx
    hash); `copies` times in a row, as a producer retrying after a crash would."""

    topic: str
    key: bytes
    value: bytes
    ident: str
    copies: int = 1


@dataclass(frozen=True)
class Sent:
    ident: str
    partition: str  # "topic:partition", as the members log their assignments
    at: float  # wall-clock time, before the first copy was sent


@dataclass
class Flow:
    """Messages published one each `pace` seconds, batch after batch (``batch(n)`` makes
    the n-th) until the test has seen the moment it waits for (``until``), not for a
    fixed count or time: on a loaded machine a rebalance or a takeover may take longer
    than any fixed flow. Bounded by `deadline` seconds, after which the flow fails."""

    bootstrap: str
    batch: Callable[[int], Awaitable[list[Message]]]
    pace: float
    deadline: float = 200.0
    sent: list[Sent] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=False
        )
        await producer.start()
        try:
            deadline = time.monotonic() + self.deadline
            n = 0
            while not self._stop.is_set():  # a batch is published whole
                assert time.monotonic() < deadline, f"the flow was not stopped in {self.deadline} s"
                for message in await self.batch(n):
                    at = time.time()
                    for _ in range(message.copies):
                        sent = await producer.send_and_wait(
                            message.topic, message.value, key=message.key
                        )
                    self.sent.append(Sent(message.ident, f"{sent.topic}:{sent.partition}", at))
                    await asyncio.sleep(self.pace)
                n += 1
        finally:
            await producer.stop()

    async def _check(self, what: str, deadline: float) -> None:
        assert self._task is not None, "the flow was not started"
        if self._task.done():
            await self._task  # its own failure, if any
            raise AssertionError(f"the flow of messages ended before {what}")
        assert time.monotonic() < deadline, f"not within the flow's bound: {what}"
        await asyncio.sleep(0.05)

    async def until_sent(self, count: int, timeout: float = 60.0) -> None:
        """Until `count` messages in all were sent (the flow still on)."""
        deadline = time.monotonic() + timeout
        while len(self.sent) < count:
            await self._check(f"{count} messages were sent ({len(self.sent)} were)", deadline)

    async def until(
        self, reached: Callable[[], Awaitable[bool]], what: str, timeout: float = 60.0
    ) -> None:
        """Keep the flow on until ``reached()``, then end it (its last batch whole)."""
        deadline = time.monotonic() + timeout
        while not await reached():
            await self._check(what, deadline)
        self._stop.set()
        assert self._task is not None
        await self._task

    def since(self, at: float, partitions: frozenset[str]) -> list[str]:
        """What was sent to `partitions` after the wall-clock time `at`."""
        return [s.ident for s in self.sent if s.at > at and s.partition in partitions]

    async def stop(self) -> None:
        """End the flow now, if it runs (a test's ``finally``)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task})
