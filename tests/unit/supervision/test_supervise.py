"""supervise(): a task rides out outages (waits, backs off, starts again) and ends the
process only on a configuration error or a bug, never leaving it half alive."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from tests.polling import until

from intentd.backoff import Backoff
from intentd.runtime import (
    READINESS,
    Readiness,
    RoleCancelled,
    disarm_exit,
    exit_within,
    run_roles,
)
from intentd.settings import ConfigError
from intentd.stopping import Stopping
from intentd.supervision import KAFKA, POSTGRESQL, Diagnosis, Health, progress, supervise
from intentd.supervision.dependencies import BUG, TRANSIENT

FAST = Backoff(0.001, cap=0.01)


class Deadlock(Exception):
    pass


def diagnose(error: BaseException) -> Diagnosis:
    if isinstance(error, ConnectionRefusedError):
        return Diagnosis.outage(POSTGRESQL)
    if isinstance(error, Deadlock):
        return TRANSIENT
    if isinstance(error, ConfigError):
        return Diagnosis.configuration(str(error))
    if isinstance(error, PermissionError):
        return Diagnosis.configuration("kafka: the brokers refuse this client")
    return BUG


class Database:
    def __init__(self) -> None:
        self.up = True
        self.probes = 0

    async def __call__(self) -> None:
        self.probes += 1
        if not self.up:
            raise ConnectionRefusedError("refused")


def fast_health(readiness: Readiness | None = None, **kwargs: object) -> Health:
    return Health(
        probe_every=0.02, probe_timeout=0.5, retry=Backoff(0.01, cap=0.02), min_gap=0.0,
        tick=0.01, readiness=readiness, **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


async def test_an_outage_of_any_length_is_waited_out_then_the_task_starts_again() -> None:
    readiness = Readiness()
    readiness.expect("poll:BASE")
    health = fast_health(readiness)
    database = Database()
    health.watch(POSTGRESQL, database)
    stop = asyncio.Event()
    probing = asyncio.create_task(health.run(stop))
    starts: list[bool] = []

    async def body(stop: asyncio.Event) -> None:
        starts.append(database.up)
        if not database.up:
            raise ConnectionRefusedError("refused")
        readiness.ready("poll:BASE")
        await stop.wait()

    database.up = False
    task = asyncio.create_task(
        supervise(
            "poll:BASE",
            body,
            stop,
            health=health,
            diagnose=diagnose,
            restart=FAST,
            readiness="poll:BASE",
        )
    )
    await until(lambda: bool(starts))
    probed = database.probes
    await until(lambda: database.probes >= probed + 5)  # an outage of 5 probes (not 0.2 s):
    # the task waits for the database, not in a loop
    assert starts == [False]
    assert set(readiness.missing()) == {"poll:BASE", "postgresql unavailable"}
    database.up = True
    await until(lambda: readiness.missing() == [])
    assert starts == [False, True]
    stop.set()
    await asyncio.wait_for(task, 5)
    await asyncio.wait_for(probing, 5)


async def test_a_transient_failure_starts_the_task_again_after_a_pause() -> None:
    runs = 0

    async def body(stop: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs < 4:
            raise Deadlock("deadlock detected")

    await supervise("relay", body, asyncio.Event(), health=Health(), diagnose=diagnose,
                    restart=FAST)  # fmt: skip
    assert runs == 4


async def test_the_pause_grows_with_failures_in_a_row_and_starts_over_after_progress() -> None:
    pauses: list[float] = []

    class Recorded(Backoff):
        def delay(self, attempt: int, **_: object) -> float:
            pauses.append(attempt)
            return 0.0

    runs = 0

    async def body(stop: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs == 3:
            progress()  # a round done before this failure
        if runs < 6:
            raise Deadlock("again")

    await supervise("relay", body, asyncio.Event(), health=Health(), diagnose=diagnose,
                    restart=Recorded(0.0))  # fmt: skip
    assert pauses == [1, 2, 1, 2, 3]


@pytest.mark.parametrize(
    ("error", "raised", "status"),
    [
        (KeyError("bug"), KeyError, 1),
        (ConfigError("chains.BASE.tokens.0.decimals = 6: ..."), ConfigError, 2),
        (PermissionError("SASL"), ConfigError, 2),
    ],
)
async def test_a_bug_or_a_configuration_error_ends_the_process_not_ready(
    error: Exception, raised: type[Exception], status: int
) -> None:
    readiness = Readiness()
    exits: list[int] = []

    async def body(stop: asyncio.Event) -> None:
        raise error

    health = Health(readiness=readiness, on_failure=exits.append)
    with pytest.raises(raised):
        await supervise("expiry", body, asyncio.Event(), health=health, diagnose=diagnose)
    assert exits == [status]
    assert readiness.missing() == ["failed: expiry"]


async def test_stop_during_an_outage_ends_the_task_quietly() -> None:
    health = Health()
    health.watch(KAFKA, Database())
    stop = asyncio.Event()

    async def body(stop: asyncio.Event) -> None:
        raise ConnectionRefusedError("refused")

    health.failed(KAFKA, ConnectionRefusedError("refused"))  # down, and no probe runs
    asyncio.get_running_loop().call_later(0.05, stop.set)
    await asyncio.wait_for(
        supervise("relay", body, stop, health=health, diagnose=diagnose, restart=FAST), 5
    )


async def test_a_failure_while_stopping_is_not_an_error() -> None:
    stop = asyncio.Event()

    async def body(stop_: asyncio.Event) -> None:
        stop.set()
        raise ConnectionRefusedError("the database went away as we stopped")

    await supervise("poll:BASE", body, stop, health=Health(), diagnose=diagnose)


async def test_a_bug_in_a_nested_task_is_reported_once() -> None:
    exits: list[int] = []
    health = Health(on_failure=exits.append)

    async def inner(stop: asyncio.Event) -> None:
        raise KeyError("bug")

    async def outer(stop: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(supervise("inner", inner, stop, health=health, diagnose=diagnose))

    with pytest.raises(ExceptionGroup):
        await supervise("outer", outer, asyncio.Event(), health=health, diagnose=diagnose)
    assert exits == [1]


async def test_a_task_failing_for_good_while_another_hangs_in_cancelling_ends_the_process() -> None:
    """The lifecycle of the fault run: one task failed, another never finished cancelling,
    and the process stayed up, silent and ready, for minutes."""
    readiness = Readiness()
    exits: list[int] = []
    health = Health(
        readiness=readiness,
        on_failure=lambda status: exit_within(status, 0.2, exit_now=exits.append),
    )
    stop = asyncio.Event()

    async def hold_watch(stop: asyncio.Event) -> None:
        await asyncio.sleep(0.02)
        raise KeyError("bug")

    async def deaf(stop: asyncio.Event) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.shield(asyncio.sleep(3600))  # never finishes cancelling

    async def role(stop: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(supervise("hold watch", hold_watch, stop, health=health,
                                        diagnose=diagnose))  # fmt: skip
            group.create_task(supervise("consumer", deaf, stop, health=health, diagnose=diagnose))

    running = asyncio.create_task(run_roles([role], stopping=Stopping(stop=stop)))
    try:
        await until(lambda: readiness.missing() == ["failed: hold watch"], within=10)
        await until(lambda: exits == [1], within=10)  # the process ends, whatever hangs
    finally:
        disarm_exit()
        running.cancel()
        await asyncio.wait({running}, timeout=0.1)


async def test_a_cancellation_leaking_from_a_library_starts_the_task_again() -> None:
    runs = 0

    async def body(stop: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise asyncio.CancelledError  # an internal task's, re-raised by a library's close

    await supervise("lifecycle consumer", body, asyncio.Event(), health=Health(),
                    diagnose=diagnose, restart=FAST)  # fmt: skip
    assert runs == 2


async def test_a_role_left_cancelled_by_a_failed_task_group_fails_the_process() -> None:
    """The fault run's wedge: the reorg hold watch failed (the database away), the
    lifecycle's task group cancelled its siblings, and the role's cleanup (closing the
    Kafka consumer) raised a cancellation: the role ended *cancelled*, which the
    process's task group ignores, so the process lived on with the role gone, its health
    endpoint answering 200, until SIGTERM (4 min 40 s)."""
    readiness_before = list(READINESS.missing())
    exits: list[int] = []

    async def hold_watch() -> None:
        await asyncio.sleep(0.01)
        raise ConnectionRefusedError("refused")

    async def consumer() -> None:
        await asyncio.sleep(3600)

    async def close_consumer() -> None:
        raise asyncio.CancelledError  # aiokafka's stop, re-raising one of its tasks'

    async def lifecycle(stop: asyncio.Event) -> None:
        async with contextlib.AsyncExitStack() as closing:
            closing.push_async_callback(close_consumer)
            async with asyncio.TaskGroup() as group:
                group.create_task(hold_watch())
                group.create_task(consumer())

    try:
        with pytest.raises(ExceptionGroup) as raised:
            await asyncio.wait_for(
                run_roles([lifecycle], stopping=Stopping(), on_failure=exits.append), 5
            )
        assert raised.group_contains(RoleCancelled)
        assert exits == [1]
        assert "failed: a role failed" in READINESS.missing()
    finally:
        READINESS._failed = None  # the process-wide readiness, shared by the tests
    assert READINESS.missing() == readiness_before
