"""The API's view of PostgreSQL is the process's one ``supervision.Health``: its lines,
its readiness and the library noise it keeps out, on fakes."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.log_capture import own_logs

from intentd.adapters.library_logs import QuietLibraryLogs
from intentd.api.connections import Database, database_cadence
from intentd.api.problems import ApiProblem
from intentd.settings import Settings
from intentd.supervision import POSTGRESQL, Health
from intentd.supervision.outage_log import OutageLog

SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": {"A_TESTNET": {"chain_id": 1001, "network": "test", "rpc_urls": ["http://x"]}},
    }
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class ScriptedProbe:
    """Answers or fails as the test says; counts the questions."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.asked = 0

    async def __call__(self) -> None:
        self.asked += 1
        if self.error is not None:
            raise self.error


def watched(probe: ScriptedProbe, clock: Clock | None = None) -> Health:
    """A process's health watching PostgreSQL as the API needs it."""
    health = Health(clock=clock) if clock is not None else Health()
    health.watch(POSTGRESQL, probe, cadence=database_cadence(SETTINGS))
    return health


def test_an_outage_is_a_first_line_summaries_and_a_last_line() -> None:
    lines = OutageLog(POSTGRESQL, summary_every=30)
    first = lines.failed(0.0, "ConnectionRefusedError: refused")
    assert first is not None and first.event == "dependency unavailable"
    assert first.fields == {"dependency": "postgresql", "error": "ConnectionRefusedError: refused"}
    assert lines.failed(1.0, "ConnectionRefusedError: refused") is None
    for _ in range(500):
        lines.noted(None)  # requests refused while it is known away
    assert lines.still(29.9) is None
    summary = lines.still(30.0)
    assert summary is not None and summary.event == "dependency still unavailable"
    assert summary.fields == {
        "dependency": "postgresql",
        "down_seconds": 30.0,
        "failures": 502,
        "error": "ConnectionRefusedError: refused",
    }
    assert lines.still(45.0) is None
    assert lines.still(60.0) is not None
    last = lines.answered(61.5)
    assert last is not None and last.event == "dependency available again"
    assert last.fields["outage_seconds"] == 61.5 and last.fields["failures"] == 502
    assert not lines.down and lines.answered(62.0) is None and lines.still(200.0) is None


def test_failures_noted_before_an_answer_start_no_outage() -> None:
    lines = OutageLog(POSTGRESQL)
    lines.noted("ConnectionDoesNotExistError: closed")
    assert lines.answered(1.0) is None and not lines.down
    first = lines.failed(2.0, "TimeoutError")
    assert first is not None
    last = lines.answered(3.0)
    assert last is not None and last.fields["failures"] == 1  # the noted one was forgotten


@given(st.lists(st.tuples(st.sampled_from(["fail", "note", "answer", "tick"]), st.floats(0, 5))))
def test_lines_are_one_start_and_one_end_per_outage(steps: list[tuple[str, float]]) -> None:
    lines = OutageLog(POSTGRESQL, summary_every=30)
    now, starts, ends, away = 0.0, 0, 0, False
    for step, later in steps:
        now += later
        if step == "fail":
            line = lines.failed(now, "e")
            starts += line is not None
            assert (line is not None) == (not away)
            away = True
        elif step == "note":
            lines.noted("e")
        elif step == "answer":
            line = lines.answered(now)
            ends += line is not None
            assert (line is not None) == away
            away = False
        else:
            line = lines.still(now)
            assert line is None or away
        assert lines.down == away
    assert starts - ends == int(away)


async def test_the_watch_turns_not_ready_on_a_failed_probe_and_ready_on_an_answer() -> None:
    probe, clock, changes = ScriptedProbe(), Clock(), []
    health = watched(probe, clock)
    health.listen(POSTGRESQL, changes.append)
    with own_logs() as logs:
        await health.probe(POSTGRESQL)
        assert not health.is_down(POSTGRESQL) and changes == []
        health.missed(
            POSTGRESQL, "ConnectionDoesNotExistError: closed"
        )  # a request: asks the probe
        assert not health.is_down(POSTGRESQL), "one broken connection is not an outage"
        probe.error = ConnectionRefusedError(111, "refused")
        await health.probe(POSTGRESQL)
        assert health.is_down(POSTGRESQL) and changes == [False]
        for _ in range(10):
            health.missed(POSTGRESQL, None)
            clock.now += 4
            await health.probe(POSTGRESQL)
        probe.error = None
        await health.probe(POSTGRESQL)
        assert not health.is_down(POSTGRESQL) and changes == [False, True]
    events = [(entry["event"], entry["log_level"]) for entry in logs]
    assert events == [
        ("dependency unavailable", "warning"),
        ("dependency still unavailable", "warning"),
        ("dependency available again", "info"),
    ]
    assert logs[0]["error"] == "ConnectionRefusedError: [Errno 111] refused"
    assert logs[-1]["failures"] == 22  # the request, 11 probes, 10 refused requests
    assert logs[-1]["outage_seconds"] == 40.0


class UnusedPool:
    async def acquire(self, timeout: float | None = None) -> object:
        raise AssertionError("the database is known away: no request waits on the pool")


async def test_a_database_known_down_by_any_role_is_a_503_at_once() -> None:
    """Under ``intentd run`` a daemon role's report makes the API answer 503 at once."""
    health = watched(ScriptedProbe())
    database = Database.of(SETTINGS, UnusedPool(), health=health)  # type: ignore[arg-type]
    health.failed(POSTGRESQL, ConnectionResetError("reset"), task="poll:A_TESTNET")
    with pytest.raises(ApiProblem) as refused:
        async with database.connection():
            pass
    assert (refused.value.status, refused.value.code) == (503, "database_unavailable")


def record(name: str, message: str, error: BaseException | None) -> logging.LogRecord:
    exc_info = (type(error), error, None) if error is not None else None
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, None, exc_info)


@pytest.mark.parametrize("away", [False, True])
async def test_asyncpg_noise_is_kept_out_of_the_logs(away: bool) -> None:
    probe = ScriptedProbe()
    health = watched(probe)
    if away:
        probe.error = OSError("refused")
        await health.probe(POSTGRESQL)
    noise = QuietLibraryLogs(health)
    floor = record(
        "asyncpg.pool",
        "Failed to restore the pool connection floor; retrying",
        ConnectionRefusedError(111, "refused"),
    )
    assert noise.filter(floor) is not away
    if not away:
        assert floor.exc_info is None
        assert floor.getMessage().endswith("retrying: ConnectionRefusedError: [Errno 111] refused")
    unretrieved = record(
        "asyncio",
        "Future exception was never retrieved",
        ConnectionError("unexpected connection_lost() call"),
    )
    assert not noise.filter(unretrieved)
    other = record("asyncio", "Future exception was never retrieved", ValueError("bug"))
    assert noise.filter(other) and other.exc_info is not None
    assert noise.filter(record("uvicorn.error", "anything", None))
