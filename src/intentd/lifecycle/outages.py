"""Keeping a task of the lifecycle role alive through a database outage.

The role's tasks (consumer, outbox relay, expiry, verifier) run in one task group:
one that fails stops them all, and the supervisor restarts the process. For a bug or
a Kafka failure that is right (the process resumes from its durable position). For a
database that went away for a moment it is not: every task would fail at once, the
process would restart in a loop until the database is back, and the consumer, which
waits out outages itself, would be stopped with it. :func:`outlast_outages` restarts
a task that failed because the database is unavailable
(:attr:`~intentd.lifecycle.failures.Failure.UNAVAILABLE`, as ``classify`` says),
after a pause; anything else still ends the role.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from intentd.lifecycle import failures
from intentd.lifecycle.failures import Classify, Failure
from intentd.wait import wait_any

__all__ = ["outlast_outages"]

log = structlog.get_logger()


async def outlast_outages(
    name: str,
    run: Callable[[asyncio.Event], Awaitable[None]],
    stop: asyncio.Event,
    *,
    classify: Classify,
    base: float = 0.5,
) -> None:
    """``await run(stop)``; run it again after a pause (backing off up to 5 s) each
    time it fails with the database unavailable, until it returns or ``stop`` is set."""
    failed = 0
    while True:
        try:
            await run(stop)
        except Exception as exc:
            if classify(exc) is not Failure.UNAVAILABLE:
                raise
            failed += 1
            log.warning(
                "the database is unavailable; restarting the task after a pause",
                task=name,
                error=repr(exc),
                failures=failed,
            )
            await wait_any(stop, within=failures.backoff(failed, base=base))
            if stop.is_set():
                return
            continue
        return
