"""Console sessions, sign-in throttle counters and known devices in PostgreSQL
(migration 0019).

A session row is found by the SHA-256 of its cookie's id and read with its user, so
a request sees the user's role and state as they are now (a role change or a
disabling applies at the next request). Sessions are revoked in place (never
deleted while they may still be presented); :func:`prune` removes rows long past
any use.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from intentd.access.roles import Role
from intentd.access.session_policy import SessionTimes
from intentd.access.throttle import Counter
from intentd.adapters.postgres import Connection

__all__ = [
    "SessionRow",
    "add_device",
    "clear_counter",
    "count_attempt",
    "create",
    "device_user",
    "find",
    "hold_counters",
    "prune",
    "revoke",
    "save_counter",
    "touch",
]


@dataclass(frozen=True, slots=True)
class SessionRow:
    id_hash: str
    kind: str
    csrf_token: str
    times: SessionTimes
    attempts: int
    user_id: UUID
    client_id: UUID
    client_name: str
    email: str
    role: Role
    disabled: bool
    totp_on: bool


async def create(
    conn: Connection,
    *,
    id_hash: str,
    user_id: UUID,
    kind: str,
    csrf_token: str,
    expires_at: datetime,
    source: str | None,
    user_agent: str,
) -> None:
    await conn.execute(
        "INSERT INTO console_sessions (id_hash, user_id, kind, csrf_token, expires_at, source,"
        " user_agent) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        id_hash,
        user_id,
        kind,
        csrf_token,
        expires_at,
        source,
        user_agent[:300],
    )


async def find(conn: Connection, id_hash: str) -> SessionRow | None:
    record = await conn.fetchrow(
        """
        SELECT s.id_hash, s.kind, s.csrf_token, s.created_at, s.last_seen_at, s.expires_at,
               s.revoked_at, s.attempts, u.id AS user_id, u.client_id, c.name AS client_name,
               u.email, u.role, u.disabled_at IS NOT NULL AS disabled,
               u.totp_enabled_at IS NOT NULL AS totp_on
          FROM console_sessions s
          JOIN console_users u ON u.id = s.user_id
          JOIN clients c ON c.id = u.client_id
         WHERE s.id_hash = $1
        """,
        id_hash,
    )
    return _session(record) if record is not None else None


def _session(record: Any) -> SessionRow:
    return SessionRow(
        id_hash=record["id_hash"],
        kind=record["kind"],
        csrf_token=record["csrf_token"],
        times=SessionTimes(
            record["created_at"], record["last_seen_at"], record["expires_at"], record["revoked_at"]
        ),
        attempts=record["attempts"],
        user_id=record["user_id"],
        client_id=record["client_id"],
        client_name=record["client_name"],
        email=record["email"],
        role=Role(record["role"]),
        disabled=record["disabled"],
        totp_on=record["totp_on"],
    )


async def touch(conn: Connection, id_hash: str) -> None:
    await conn.execute(
        "UPDATE console_sessions SET last_seen_at = now()"
        " WHERE id_hash = $1 AND revoked_at IS NULL",
        id_hash,
    )


async def revoke(conn: Connection, id_hash: str) -> None:
    await conn.execute(
        "UPDATE console_sessions SET revoked_at = coalesce(revoked_at, now()) WHERE id_hash = $1",
        id_hash,
    )


async def count_attempt(conn: Connection, id_hash: str) -> int | None:
    """One more second-factor attempt on a challenge that is not revoked, counted before
    it is checked (the row stays locked until the caller's transaction ends: attempts
    on one challenge go one at a time); the attempts so far, None if revoked or gone."""
    found: int | None = await conn.fetchval(
        "UPDATE console_sessions SET attempts = attempts + 1"
        " WHERE id_hash = $1 AND revoked_at IS NULL RETURNING attempts",
        id_hash,
    )
    return found


async def hold_counters(conn: Connection, keys: list[str], now: datetime) -> dict[str, Counter]:
    """The throttle counters of ``keys``, each row locked until the caller's transaction
    ends (a missing one made, empty, at ``now``): a sign-in reads, decides and writes
    them while no other can. Locked in key order, so two sign-ins never wait on each
    other crosswise."""
    held: dict[str, Counter] = {}
    for key in sorted(set(keys)):
        row = await conn.fetchrow(
            """
            INSERT INTO console_signin_throttle (key, failures, window_start) VALUES ($1, 0, $2)
            ON CONFLICT (key) DO UPDATE SET updated_at = now()
            RETURNING failures, window_start, locked_until
            """,
            key,
            now,
        )
        assert row is not None
        held[key] = Counter(row["failures"], row["window_start"], row["locked_until"])
    return held


async def save_counter(conn: Connection, key: str, counter: Counter) -> None:
    """Write a counter (decided on the values :func:`hold_counters` read, in the same
    transaction)."""
    await conn.execute(
        """
        INSERT INTO console_signin_throttle (key, failures, window_start, locked_until)
        VALUES ($1, $2, $3, $4)
        ON CONFLICT (key) DO UPDATE SET failures = excluded.failures,
               window_start = excluded.window_start, locked_until = excluded.locked_until,
               updated_at = now()
        """,
        key,
        counter.failures,
        counter.window_start,
        counter.locked_until,
    )


async def clear_counter(conn: Connection, key: str) -> None:
    await conn.execute("DELETE FROM console_signin_throttle WHERE key = $1", key)


async def add_device(
    conn: Connection, token_hash: str, user_id: UUID, expires_at: datetime
) -> None:
    await conn.execute(
        "INSERT INTO console_devices (token_hash, user_id, expires_at) VALUES ($1, $2, $3)"
        " ON CONFLICT (token_hash) DO UPDATE SET last_used_at = now(), expires_at = $3",
        token_hash,
        user_id,
        expires_at,
    )


async def device_user(conn: Connection, token_hash: str, now: datetime) -> UUID | None:
    """The user a device cookie was given to, while it lasts."""
    found: UUID | None = await conn.fetchval(
        "SELECT user_id FROM console_devices WHERE token_hash = $1 AND expires_at > $2",
        token_hash,
        now,
    )
    return found


async def prune(conn: Connection) -> int:
    """Remove sessions, links, devices and counters long past any use; how many rows."""
    total = 0
    for statement in (
        "DELETE FROM console_sessions WHERE expires_at < now() - interval '7 days'",
        "DELETE FROM console_signin_links WHERE expires_at < now() - interval '7 days'",
        "DELETE FROM console_devices WHERE expires_at < now()",
        "DELETE FROM console_signin_throttle WHERE updated_at < now() - interval '1 day'"
        " AND (locked_until IS NULL OR locked_until < now())",
    ):
        status: str = await conn.execute(statement)
        total += int(status.rsplit(maxsplit=1)[-1])
    return total
