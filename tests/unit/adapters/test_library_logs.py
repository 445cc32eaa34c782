"""aiokafka's and asyncpg's own lines: none while their dependency is down, at most one of
a kind per interval otherwise, never a traceback, and each a hint to probe."""

from __future__ import annotations

import logging

from intentd.adapters.library_logs import QuietLibraryLogs
from intentd.supervision import KAFKA, POSTGRESQL, Health


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(name: str, level: int, msg: str, *args: object, error: BaseException | None = None):  # type: ignore[no-untyped-def]
    exc_info = (type(error), error, None) if error is not None else None
    return logging.LogRecord(name, level, "x.py", 1, msg, args, exc_info)


def test_a_flood_of_reconnect_errors_becomes_one_line_per_interval() -> None:
    health, clock = Health(), Clock()
    quiet = QuietLibraryLogs(health, every=30, clock=clock)
    written = []
    for second in range(90):  # a hundred a second, as aiokafka does while the brokers are away
        clock.now = float(second)
        for _ in range(100):
            line = record("aiokafka", logging.ERROR, "Unable connect to node %s: %s", 1, "x")
            if quiet.filter(line):
                written.append(line.getMessage())
    assert written == [
        "Unable connect to node 1: x",
        "Unable connect to node 1: x (2999 more like it in the last 30 s)",
        "Unable connect to node 1: x (2999 more like it in the last 30 s)",
    ]


def test_nothing_while_the_dependency_is_down_and_info_lines_pass() -> None:
    health = Health()
    health.failed(KAFKA, ConnectionError("refused"))
    quiet = QuietLibraryLogs(health)
    assert not quiet.filter(record("aiokafka.consumer.fetcher", logging.ERROR, "Failed fetch"))
    assert quiet.filter(record("aiokafka.consumer.group_coordinator", logging.INFO, "Joined"))
    assert quiet.filter(record("intentd", logging.ERROR, "ours are never held"))


def test_no_traceback_the_error_goes_into_the_line() -> None:
    quiet = QuietLibraryLogs(Health())
    line = record(
        "asyncpg.pool", logging.WARNING, "Failed to restore the pool connection floor; retrying",
        error=ConnectionRefusedError("[Errno 111] Connect call failed (100%)"),
    )  # fmt: skip
    assert quiet.filter(line)
    assert line.exc_info is None
    assert line.getMessage() == (
        "Failed to restore the pool connection floor; retrying:"
        " ConnectionRefusedError: [Errno 111] Connect call failed (100%)"
    )


def test_a_line_makes_the_dependency_probed_at_once() -> None:
    suspected = []

    class Watching(Health):
        def suspect(self, dependency):  # type: ignore[no-untyped-def]
            suspected.append(dependency)

    quiet = QuietLibraryLogs(Watching())
    quiet.filter(record("asyncpg.pool", logging.WARNING, "Failed to restore"))
    quiet.filter(record("aiokafka", logging.WARNING, "Heartbeat failed: rebalancing"))
    quiet.filter(record("aiokafka.conn", logging.ERROR, "Unable connect"))
    assert suspected == [POSTGRESQL, KAFKA]
