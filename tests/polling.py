"""Waiting in a test for a condition of this process's state: polled, to a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], bool], within: float = 5.0, every: float = 0.005) -> None:
    """Until ``condition()`` holds (checked every ``every`` seconds); fails after
    ``within`` seconds. For cheap checks of in-process state, not for I/O."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(every)
