"""Helpers of the scale-out tests: group members as subprocesses, and when a rebalance
among them is over (read from their ``kafka partitions assigned`` log lines)."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

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

    async def rebalance(self, since: float, timeout: float = 30.0) -> float:
        """Wait until the group settles after `since`; the seconds it took."""
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
