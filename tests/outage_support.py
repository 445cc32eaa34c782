"""Dependency outages for tests: a dev broker of the test's own that it can take down,
and a daemon's readiness (PostgreSQL goes behind ``intentd_dev.fault_proxy.proxy_for``).

The shared dev broker serves every engineer's tests, so a test that cuts a broker
starts one of its own (``kafka_mock_server``: ``down`` and ``up`` cut and refuse its
connections; clients reach it at the address its metadata advertises, so a TCP proxy
in front of it would be bypassed after bootstrap).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from intentd_dev.devinfra.kafka_mock import create_topics, ping, set_broker_down
from tests.support import ROOT

__all__ = [
    "Daemon",
    "PrivateBroker",
    "Readiness",
    "private_broker",
]


@dataclass(frozen=True)
class PrivateBroker:
    bootstrap: str
    control: str

    def down(self) -> None:
        set_broker_down(self.control, True)

    def up(self) -> None:
        set_broker_down(self.control, False)

    def create(self, topics: list[str], partitions: int = 4) -> None:
        create_topics(self.control, topics, partitions=partitions)


@asynccontextmanager
async def private_broker(directory: Path) -> AsyncIterator[PrivateBroker]:
    """A dev broker of this test alone, stopped at the end."""
    state = directory / "kafka.json"
    log = (directory / "kafka.log").open("ab")
    server = "intentd_dev.devinfra.kafka_mock_server"
    process = subprocess.Popen(
        [sys.executable, "-m", server, "--state-file", str(state)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            assert process.poll() is None, "the private broker exited"
            assert time.monotonic() < deadline, "the private broker did not start"
            if state.exists():
                found = json.loads(state.read_text())
                if ping(found["control"]):
                    break
            await asyncio.sleep(0.05)
        yield PrivateBroker(found["bootstrap"], found["control"])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass
class Daemon:
    """An ``intentd`` daemon run as a user runs it, with its health endpoint."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    async def readiness(self, http: aiohttp.ClientSession) -> int:
        """``/readyz``'s status; 0 if nothing answers."""
        try:
            async with http.get(
                f"http://127.0.0.1:{self.port}/readyz", timeout=aiohttp.ClientTimeout(total=2)
            ) as response:
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    def lines(self) -> list[dict[str, object]]:
        """The JSON lines it logged (others, if any, as ``{"raw": line}``)."""
        found: list[dict[str, object]] = []
        for line in self.log.read_text().splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                found.append({"raw": line})
        return found


class Readiness:
    """Every daemon's ``/readyz``, asked every 0.2 s in the background."""

    def __init__(self, daemons: list[Daemon]) -> None:
        self.daemons = daemons
        self.seen: list[tuple[float, str, int]] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Readiness:
        self._task = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.wait({self._task})

    async def _watch(self) -> None:
        async with aiohttp.ClientSession() as http:
            while True:
                statuses = await asyncio.gather(*(d.readiness(http) for d in self.daemons))
                now = time.monotonic()
                for daemon, status in zip(self.daemons, statuses, strict=True):
                    self.seen.append((now, daemon.name, status))
                await asyncio.sleep(0.2)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(daemon.name for daemon in self.daemons)

    def between(self, name: str, start: float, end: float) -> set[int]:
        return {status for at, who, status in self.seen if who == name and start <= at <= end}

    async def all_ready(self, within: float = 60.0) -> None:
        """Until every daemon answers 200 (each still alive)."""
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as http:
            while True:
                for daemon in self.daemons:
                    assert daemon.alive, f"{daemon.name} exited\n{daemon.log.read_text()[-3000:]}"
                statuses = [await d.readiness(http) for d in self.daemons]
                if all(status == 200 for status in statuses):
                    return
                assert time.monotonic() < deadline, f"not ready: {statuses}"
                await asyncio.sleep(0.2)
