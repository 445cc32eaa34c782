"""Connections a role holds for long (a lease's, a listener's), given back whatever befell them.

A connection that PostgreSQL or the network dropped is released to its pool by asyncpg
itself, at once: the proxy the role holds then refuses every call, ``terminate()``
included (``InterfaceError: ... connection has been released back to the pool``). That
error says nothing of what happened, and raised from a ``finally`` it would hide the
real one. So:

- :func:`terminate` ends a connection's session, and does nothing for one asyncpg
  already let go (its session ended with it);
- :func:`unlisten` removes a ``LISTEN`` callback within ``within`` seconds, else (a
  stalled or dropped connection) terminates the connection; it never raises;
- :func:`give_back` returns a connection to its pool, terminated first if asked.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import asyncpg

from intentd.adapters.postgres import Pool

__all__ = ["give_back", "released", "terminate", "unlisten"]

UNLISTEN_SECONDS = 2.0


def released(conn: Any) -> bool:
    """Whether asyncpg took ``conn`` back already (a proxy it detached: the connection was
    lost, or given back). Plain connections never are."""
    return getattr(conn, "_con", conn) is None


def terminate(conn: Any) -> None:
    """End ``conn``'s session now (its advisory locks and ``LISTEN`` with it)."""
    if released(conn):
        return  # lost: its session is over already
    with contextlib.suppress(asyncpg.InterfaceError):  # released meanwhile
        conn.terminate()


async def unlisten(
    conn: Any,
    channel: str,
    callback: Callable[..., Any],
    *,
    within: float = UNLISTEN_SECONDS,
) -> bool:
    """Stop listening; False if the connection failed or was gone (then terminated)."""
    if released(conn):
        return False
    try:
        async with asyncio.timeout(within):
            await conn.remove_listener(channel, callback)
    except Exception:  # dropped, stalled or released: its session must end
        terminate(conn)
        return False
    return True


async def give_back(pool: Pool, conn: Any, *, terminate_first: bool = False) -> None:
    """Return ``conn`` to ``pool`` (terminated first if ``terminate_first``); a connection
    asyncpg already took back is left alone."""
    if terminate_first:
        terminate(conn)
    if released(conn):
        return
    await pool.release(conn)
