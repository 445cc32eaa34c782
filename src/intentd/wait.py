"""Waiting on a role's ``stop`` event or a wakeup, with a timeout: one way, for every loop.

:func:`wait_any` returns as soon as one of the events is set, or once ``within``
seconds have passed; it never raises ``TimeoutError`` and leaves no task behind
(the waiters it starts are cancelled before it returns, also when it is cancelled).
It does not clear the events: the caller decides when a wakeup is consumed.
"""

from __future__ import annotations

import asyncio

__all__ = ["wait_any"]


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
