"""Health: which dependencies answer (probes and the tasks' reports), which tasks make
progress, and what readiness says of both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from tests.log_capture import own_logs
from tests.polling import until

from intentd.backoff import Backoff
from intentd.runtime import Readiness
from intentd.supervision import KAFKA, POSTGRESQL, Cadence, Health, rpc

FAST = {"probe_every": 0.05, "probe_timeout": 0.2, "retry": Backoff(0.01, cap=0.05),
        "min_gap": 0.0, "tick": 0.01}  # fmt: skip


class Dependency:
    """A probe that answers while ``up``."""

    def __init__(self, *, hangs: bool = False) -> None:
        self.up = True
        self.hangs = hangs
        self.probes = 0

    async def __call__(self) -> None:
        self.probes += 1
        if self.hangs and not self.up:
            await asyncio.sleep(3600)  # a stalled server: the probe's timeout ends it
        if not self.up:
            raise ConnectionRefusedError("refused")


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Health], None]]:
    stops: list[tuple[asyncio.Event, asyncio.Task[None]]] = []

    def start(health: Health) -> None:
        stop = asyncio.Event()
        stops.append((stop, asyncio.create_task(health.run(stop))))

    yield start
    for stop, task in stops:
        stop.set()
        await asyncio.wait_for(task, 5)


def watching_a_database() -> tuple[Readiness, Dependency, Health]:
    """A health of fast probes watching a dependency as PostgreSQL, and its readiness."""
    readiness = Readiness()
    database = Dependency()
    health = Health(readiness=readiness, **FAST)  # type: ignore[arg-type]
    health.watch(POSTGRESQL, database)
    return readiness, database, health


async def test_a_probe_that_fails_makes_the_process_not_ready_until_it_answers(
    running: Callable[[Health], None],
) -> None:
    readiness, database, health = watching_a_database()
    with own_logs() as logs:
        running(health)  # inside: the lines of its probe task are this test's
        await until(lambda: database.probes > 0)
        assert readiness.missing() == []
        database.up = False
        await until(lambda: health.is_down(POSTGRESQL))
        assert readiness.missing() == ["postgresql unavailable"]
        await until(lambda: database.probes > 10)  # it keeps asking, backing off
        database.up = True
        await until(lambda: not health.is_down(POSTGRESQL))
        assert readiness.missing() == []
    events = [entry["event"] for entry in logs]
    assert events == ["dependency unavailable", "dependency available again"]


async def test_a_stalled_dependency_is_down_after_the_probe_timeout(
    running: Callable[[Health], None],
) -> None:
    database = Dependency(hangs=True)
    health = Health(**FAST)  # type: ignore[arg-type]
    health.watch(POSTGRESQL, database)
    running(health)
    database.up = False
    await until(lambda: health.is_down(POSTGRESQL))
    database.up = True
    await until(lambda: not health.is_down(POSTGRESQL))


async def test_a_task_report_is_down_at_once_and_the_probe_says_when_it_is_back(
    running: Callable[[Health], None],
) -> None:
    broker = Dependency()
    health = Health(**{**FAST, "probe_every": 3600})  # type: ignore[arg-type]
    health.watch(KAFKA, broker)
    running(health)
    broker.up = False
    health.failed(KAFKA, ConnectionError("reset"), task="relay")
    assert health.is_down(KAFKA)  # at once, not at the next probe
    stop = asyncio.Event()
    waiting = asyncio.create_task(health.wait_up(KAFKA, stop))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    broker.up = True
    assert await asyncio.wait_for(waiting, 5)


async def test_a_suspicion_probes_at_once(running: Callable[[Health], None]) -> None:
    broker = Dependency()
    health = Health(**{**FAST, "probe_every": 3600})  # type: ignore[arg-type]
    health.watch(KAFKA, broker)
    running(health)
    await asyncio.sleep(0.05)
    assert broker.probes == 0  # every hour, while it answers
    broker.up = False
    health.suspect(KAFKA)
    await until(lambda: health.is_down(KAFKA))


async def test_a_dependency_without_a_probe_ends_its_outage_when_a_call_answers() -> None:
    readiness = Readiness()
    health = Health(readiness=readiness)
    health.failed(rpc("BASE"), TimeoutError(), task="trigger verifier")
    assert health.is_down(rpc("BASE"))
    assert readiness.missing() == []  # side work: the process is still ready
    assert await health.wait_up(rpc("BASE"), asyncio.Event())  # nothing to wait for
    health.answered(rpc("BASE"))
    assert not health.is_down(rpc("BASE"))


async def test_a_task_without_progress_is_stalled_until_it_progresses(
    running: Callable[[Health], None],
) -> None:
    readiness = Readiness()
    health = Health(readiness=readiness, **FAST)  # type: ignore[arg-type]
    with own_logs() as logs:
        running(health)  # inside: the lines of its watch are this test's
        health.begin("consumer", stall_after=0.1)
        health.begin("relay", stall_after=None)  # not watched for progress
        await until(lambda: readiness.missing() == ["consumer makes no progress"])
        health.beat("consumer")
        assert readiness.missing() == []
    assert [entry["event"] for entry in logs] == [
        "task makes no progress", "task makes progress again"
    ]  # fmt: skip


async def test_a_failed_task_makes_the_process_never_ready_and_ends_it() -> None:
    readiness = Readiness()
    exits: list[int] = []
    health = Health(readiness=readiness, on_failure=exits.append)
    health.fail("reorg hold watch", KeyError("bug"), exit_status=1)
    assert readiness.missing() == ["failed: reorg hold watch"]
    assert exits == [1]


async def test_waiting_for_a_dependency_is_not_a_stall(
    running: Callable[[Health], None],
) -> None:
    readiness, database, health = watching_a_database()
    running(health)
    health.begin("consumer", stall_after=0.1)
    database.up = False
    await until(lambda: health.is_down(POSTGRESQL))
    await asyncio.sleep(0.3)  # thrice the bound, the database away
    assert readiness.missing() == ["postgresql unavailable"]
    database.up = True
    await until(lambda: readiness.missing() == [])  # the bound counts from its return
    await until(lambda: readiness.missing() == ["consumer makes no progress"])


async def test_one_probe_serves_every_role_at_the_closest_cadence_asked() -> None:
    """``intentd run``: the daemons and the API both need PostgreSQL; one probe, asked
    as often as the closest need says, and one outage told once."""
    first, second = Dependency(), Dependency()
    health = Health()
    health.watch(POSTGRESQL, first)  # the daemons' (every 5 s)
    api = Cadence(every=1.0, timeout=10.0, retry=Backoff(1.0, factor=1.0, cap=1.0), min_gap=0.1)
    health.watch(POSTGRESQL, second, cadence=api)
    cadence = health.cadence(POSTGRESQL)
    assert (cadence.every, cadence.timeout, cadence.min_gap) == (1.0, 3.0, 0.1)
    assert cadence.retry.cap == 1.0
    assert await health.probe(POSTGRESQL)
    assert (first.probes, second.probes) == (1, 0)
    heard: list[bool] = []
    health.listen(POSTGRESQL, heard.append)
    with own_logs() as logs:
        health.failed(POSTGRESQL, ConnectionResetError("reset"), task="poll:BASE")
        health.missed(POSTGRESQL, ConnectionResetError("reset"))  # an API request
        first.up = False
        assert not await health.probe(POSTGRESQL)
        first.up = True
        assert await health.probe(POSTGRESQL)
    assert heard == [False, True]
    assert [entry["event"] for entry in logs] == [
        "dependency unavailable", "dependency available again"
    ]  # fmt: skip
    assert logs[-1]["failures"] == 3


async def test_a_failed_use_is_no_outage_until_the_probe_says_so(
    running: Callable[[Health], None],
) -> None:
    database = Dependency()
    health = Health(**{**FAST, "probe_every": 3600})  # type: ignore[arg-type]
    health.watch(POSTGRESQL, database)
    running(health)
    await asyncio.sleep(0.05)
    health.missed(POSTGRESQL, ConnectionResetError("one broken connection"))
    await until(lambda: database.probes == 1)  # asked at once
    assert not health.is_down(POSTGRESQL)
    database.up = False
    health.missed(POSTGRESQL, ConnectionRefusedError("refused"))
    await until(lambda: health.is_down(POSTGRESQL))
