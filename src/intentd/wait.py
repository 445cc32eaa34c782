"""Waiting on a role's ``stop`` event or a wakeup, with a timeout: one way, for every loop.

:func:`wait_any` returns as soon as one of the events is set, or once ``within``
seconds have passed; it never raises ``TimeoutError`` and leaves no task behind
(the waiters it starts are cancelled before it returns, also when it is cancelled).
It does not clear the events: the caller decides when a wakeup is consumed.

:func:`until_stopped` runs one step (a connect, a migration) unless ``stop`` comes
first: then the step is cancelled (and has finished cancelling) before it returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["Stopped", "until_stopped", "wait_any"]

_T = TypeVar("_T")


class Stopped(Exception):
    """``stop`` was set before the step finished; the step was cancelled or not done."""


async def wait_any(*events: asyncio.Event, within: float | None) -> bool:
    """Wait until one of ``events`` is set or ``within`` seconds pass (None: no limit);
    True if an event is set when it returns."""
    if not events:
        raise ValueError("wait_any needs at least one event")
    if any(event.is_set() for event in events):
        return True
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return any(event.is_set() for event in events)


async def until_stopped(step: Awaitable[_T], stop: asyncio.Event) -> _T:
    """``step``'s result; :class:`Stopped` if ``stop`` is set first (or already), after
    ``step`` was cancelled and its cleanup ran. Its errors propagate as they are."""
    task = asyncio.ensure_future(step)
    if stop.is_set():
        task.cancel()
    else:
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if (current is not None and current.cancelling()) or not stop.is_set():
            raise  # the caller is being cancelled (that wins), or the step cancelled itself
        raise Stopped from None
