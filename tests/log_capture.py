"""Capturing the logs of one test only.

The test session runs every async test and fixture on one event loop (pytest-asyncio's
loop scope is "session"), so a test that awaits lets other tasks run meanwhile: the
integration tests' API servers, for one, whose main-network price feed is never
readable and reports its outage every 30 s. ``structlog.testing.capture_logs`` sees
their lines too. ``own_logs`` keeps only the lines of tasks started inside it (they
inherit the bound marker; tasks created earlier do not) and of the test itself.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from structlog.contextvars import bound_contextvars, merge_contextvars
from structlog.testing import capture_logs
from structlog.typing import EventDict


@contextmanager
def own_logs() -> Iterator[list[EventDict]]:
    """The log entries of this test, filled when the block ends. Start the tasks whose
    lines a test counts inside the block."""
    marker = secrets.token_hex(4)
    mine: list[EventDict] = []
    with bound_contextvars(test_marker=marker), capture_logs([merge_contextvars]) as logs:
        yield mine
        mine.extend(entry for entry in logs if entry.get("test_marker") == marker)
