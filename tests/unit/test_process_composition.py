"""A process runs its roles on one pool sized for them, and stop drains them within a
deadline, after which a role that ignores stop is cancelled."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import SecretStr

from intentd.composition.process import Roles, _watch, pool_size
from intentd.composition.roles import EXECUTOR_CONNECTIONS, POLLER_CONNECTIONS
from intentd.runtime import run_roles
from intentd.settings import DatabaseConfig, Settings
from intentd.stopping import Stopping
from intentd.supervision import POSTGRESQL, Health

DATABASE = DatabaseConfig(url=SecretStr("postgresql://127.0.0.1:1/x"), min_pool=2, max_pool=10)


async def test_a_role_ignoring_stop_is_cancelled_after_the_drain_deadline() -> None:
    stop = asyncio.Event()
    finished: list[str] = []

    async def deaf(_: asyncio.Event) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            finished.append("deaf")  # its finally still runs

    async def polite(stop: asyncio.Event) -> None:
        await stop.wait()
        await asyncio.sleep(0.05)  # finishes what it holds, within the deadline
        finished.append("polite")

    asyncio.get_running_loop().call_later(0.05, stop.set)
    started = time.monotonic()
    await run_roles([deaf, polite], drain_seconds=0.3, stopping=Stopping(stop=stop))
    took = time.monotonic() - started
    assert sorted(finished) == ["deaf", "polite"]
    assert 0.3 <= took < 2


async def test_roles_that_stop_in_time_are_not_cancelled() -> None:
    stop = asyncio.Event()
    cancelled = False

    async def slow(stop: asyncio.Event) -> None:
        nonlocal cancelled
        await stop.wait()
        try:
            await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            cancelled = True
            raise

    asyncio.get_running_loop().call_later(0.01, stop.set)
    await run_roles([slow], drain_seconds=5, stopping=Stopping(stop=stop))
    assert not cancelled


async def test_roles_that_return_on_their_own_end_the_run_without_stop() -> None:
    async def brief(_: asyncio.Event) -> None:
        await asyncio.sleep(0.01)

    await asyncio.wait_for(run_roles([brief, brief], drain_seconds=60), 5)


async def test_a_failing_role_still_ends_the_run_with_its_error() -> None:
    async def broken(_: asyncio.Event) -> None:
        raise KeyError("bug")

    async def waits(stop: asyncio.Event) -> None:
        await stop.wait()

    with pytest.raises(ExceptionGroup) as raised:
        await asyncio.wait_for(run_roles([broken, waits]), 5)
    assert raised.group_contains(KeyError)


def test_one_pool_is_sized_for_every_role_of_the_process() -> None:
    both = ("BASE", "ARB")
    everything = Roles(pollers=both, executors=both, lifecycle=True, api=True)
    size = pool_size(everything, DATABASE)
    assert size.max_size == 2 * POLLER_CONNECTIONS + 2 * EXECUTOR_CONNECTIONS + 2 * 10
    assert size.min_size == 2 and size.session_reset


@pytest.mark.parametrize(
    ("roles", "least", "most", "reset"),
    [
        (Roles(pollers=("BASE",)), 1, POLLER_CONNECTIONS, True),
        (Roles(executors=("BASE",)), 1, EXECUTOR_CONNECTIONS, True),
        (Roles(lifecycle=True), 2, 10, True),
        (Roles(api=True), 2, 10, False),  # the API alone leaves no session state behind
    ],
)
def test_a_one_role_process_keeps_the_pool_that_role_had(
    roles: Roles, least: int, most: int, reset: bool
) -> None:
    size = pool_size(roles, DATABASE)
    assert (size.min_size, size.max_size, size.session_reset) == (least, most, reset)


def test_a_process_without_roles_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one role"):
        pool_size(Roles(), DATABASE)


def test_the_producer_keeps_the_client_id_of_a_one_role_process() -> None:
    assert Roles(pollers=("BASE",)).kafka_client_suffix == "-poll-BASE"
    assert Roles(lifecycle=True).kafka_client_suffix == "-lifecycle"
    assert Roles(pollers=("BASE",), lifecycle=True).kafka_client_suffix == "-run"
    assert not Roles(executors=("BASE",)).publishes


SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://127.0.0.1:1/x"},
        "kafka": {"bootstrap_servers": "127.0.0.1:1"},
        "chains": {"A_TESTNET": {"chain_id": 1001, "network": "test", "rpc_urls": ["http://x"]}},
        "api": {"db_timeout": 2.0},
    }
)


@pytest.mark.parametrize(
    ("roles", "every", "timeout"),
    [
        (Roles(api=True), 1.0, 2.0),  # the API's: every second, within api.db_timeout
        (Roles(pollers=("A_TESTNET",)), 5.0, 3.0),  # the daemons'
        (Roles.everything(SETTINGS), 1.0, 2.0),  # both: the closest of each bound
    ],
)
async def test_a_process_probes_each_dependency_once_as_closely_as_its_roles_need(
    roles: Roles, every: float, timeout: float
) -> None:
    health = Health()
    probes = _watch(health, SETTINGS, roles)
    try:
        kinds = sorted(type(probe).__name__ for probe in probes)
        assert kinds.count("PostgresProbe") == 1
        cadence = health.cadence(POSTGRESQL)
        assert (cadence.every, cadence.timeout) == (every, timeout)
        assert health.is_down(POSTGRESQL) is False
    finally:
        for probe in probes:
            await probe.close()
