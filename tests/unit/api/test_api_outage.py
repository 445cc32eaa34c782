"""The outage watch of the API (``api.outage``): its lines and its readiness, on fakes."""

from __future__ import annotations

import logging

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from intentd.api.outage import DatabaseWatch, LibraryNoise, OutageLog


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
        self.closed = False

    async def check(self) -> None:
        self.asked += 1
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        self.closed = True


def test_an_outage_is_a_first_line_summaries_and_a_last_line() -> None:
    lines = OutageLog("database", every=30)
    first = lines.failed(0.0, "ConnectionRefusedError: refused")
    assert first is not None and first.event == "database unavailable"
    assert first.fields == {"error": "ConnectionRefusedError: refused"}
    assert lines.failed(1.0, "ConnectionRefusedError: refused") is None
    for _ in range(500):
        lines.noted(None)  # requests refused while it is known away
    assert lines.tick(29.9) is None
    summary = lines.tick(30.0)
    assert summary is not None and summary.event == "database still unavailable"
    assert summary.fields == {
        "seconds": 30.0,
        "failures": 502,
        "last_error": "ConnectionRefusedError: refused",
    }
    assert lines.tick(45.0) is None
    assert lines.tick(60.0) is not None
    last = lines.answered(61.5)
    assert last is not None and last.event == "database available again"
    assert last.fields["seconds"] == 61.5 and last.fields["failures"] == 502
    assert not lines.away and lines.answered(62.0) is None and lines.tick(200.0) is None


def test_failures_noted_before_an_answer_start_no_outage() -> None:
    lines = OutageLog("database")
    lines.noted("ConnectionDoesNotExistError: closed")
    assert lines.answered(1.0) is None and not lines.away
    first = lines.failed(2.0, "TimeoutError")
    assert first is not None
    last = lines.answered(3.0)
    assert last is not None and last.fields["failures"] == 1  # the noted one was forgotten


@given(st.lists(st.tuples(st.sampled_from(["fail", "note", "answer", "tick"]), st.floats(0, 5))))
def test_lines_are_one_start_and_one_end_per_outage(steps: list[tuple[str, float]]) -> None:
    lines = OutageLog("database", every=30)
    now, starts, ends, away = 0.0, 0, 0, False
    for step, later in steps:
        now += later
        if step == "fail":
            note = lines.failed(now, "e")
            starts += note is not None
            assert (note is not None) == (not away)
            away = True
        elif step == "note":
            lines.noted("e")
        elif step == "answer":
            note = lines.answered(now)
            ends += note is not None
            assert (note is not None) == away
            away = False
        else:
            note = lines.tick(now)
            assert note is None or away
        assert lines.away == away
    assert starts - ends == int(away)


async def test_the_watch_turns_not_ready_on_a_failed_probe_and_ready_on_an_answer() -> None:
    probe, clock, changes = ScriptedProbe(), Clock(), []
    watch = DatabaseWatch(probe, on_change=changes.append, clock=clock)
    with structlog.testing.capture_logs() as logs:
        await watch.probe_once()
        assert not watch.away and changes == []
        watch.failed("ConnectionDoesNotExistError: closed")  # a request: asks the probe
        assert not watch.away, "one broken connection is not an outage"
        probe.error = ConnectionRefusedError(111, "refused")
        await watch.probe_once()
        assert watch.away and changes == [False]
        for _ in range(10):
            watch.failed(None)
            clock.now += 4
            await watch.probe_once()
        probe.error = None
        await watch.probe_once()
        assert not watch.away and changes == [False, True]
    events = [(entry["event"], entry["log_level"]) for entry in logs]
    assert events == [
        ("database unavailable", "warning"),
        ("database still unavailable", "warning"),
        ("database available again", "info"),
    ]
    assert logs[0]["error"] == "ConnectionRefusedError: [Errno 111] refused"
    assert logs[-1]["failures"] == 22  # the request, 11 probes, 10 refused requests
    assert logs[-1]["seconds"] == 40.0
    await watch.close()
    assert probe.closed


def record(name: str, message: str, error: BaseException | None) -> logging.LogRecord:
    exc_info = (type(error), error, None) if error is not None else None
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, None, exc_info)


@pytest.mark.parametrize("away", [False, True])
async def test_asyncpg_noise_is_kept_out_of_the_logs(away: bool) -> None:
    probe = ScriptedProbe()
    watch = DatabaseWatch(probe)
    if away:
        probe.error = OSError("refused")
        await watch.probe_once()
    noise = LibraryNoise(watch)
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
