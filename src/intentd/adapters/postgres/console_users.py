"""Console users in PostgreSQL (``console_users`` and the tables beside it, migration
0016): create, find, list, roles, disabling, passwords, sign-in links, the second factor.

A user belongs to one client; an email is one account (unique in any case). Every
change that must end a user's sessions (disabling, a new password) revokes them in
the same statement sequence, so a caller's transaction commits both or neither.
One-time things are taken with a compare-and-set (a link is used once, a TOTP step is
accepted once, a recovery code spent once), so two requests racing with the same
link, code or step cannot both succeed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from intentd.access.roles import Role
from intentd.adapters.postgres import Connection

__all__ = [
    "Credentials",
    "User",
    "UserExists",
    "accept_totp_step",
    "active_owners",
    "create",
    "credentials",
    "disable",
    "enable",
    "find_by_email",
    "get",
    "list_users",
    "new_link",
    "revoke_sessions",
    "set_password",
    "set_role",
    "set_totp",
    "start_totp",
    "turn_off_totp",
    "unused_recovery_codes",
    "use_link",
    "use_recovery_code",
]

_USER = (
    "u.id, u.client_id, c.name AS client_name, u.email, u.role,"
    " u.password_hash IS NOT NULL AS has_password, u.totp_enabled_at IS NOT NULL AS totp_on,"
    " u.disabled_at, u.created_at, u.password_changed_at"
)
_FROM = "console_users u JOIN clients c ON c.id = u.client_id"


class UserExists(Exception):
    """An account with this email exists already."""


@dataclass(frozen=True, slots=True)
class User:
    id: UUID
    client_id: UUID
    client_name: str
    email: str
    role: Role
    has_password: bool
    totp_on: bool
    disabled_at: datetime | None
    created_at: datetime
    password_changed_at: datetime | None

    @property
    def active(self) -> bool:
        return self.disabled_at is None


@dataclass(frozen=True, slots=True, repr=False)
class Credentials:
    """What signing in checks; never rendered."""

    password_hash: str | None
    totp_sealed: bytes | None
    totp_on: bool
    totp_last_step: int | None


def _user(record: Any) -> User:
    values = {name: record[name] for name in User.__dataclass_fields__}
    values["role"] = Role(values["role"])
    return User(**values)


async def create(conn: Connection, client_id: UUID, email: str, role: Role) -> User:
    try:
        user_id = await conn.fetchval(
            "INSERT INTO console_users (id, client_id, email, role) VALUES ($1, $2, $3, $4)"
            " RETURNING id",
            uuid4(),
            client_id,
            email.strip(),
            role.value,
        )
    except asyncpg.UniqueViolationError:
        raise UserExists(f"an account with the email {email.strip()!r} exists already") from None
    found = await get(conn, user_id)
    assert found is not None
    return found


async def get(conn: Connection, user_id: UUID, client_id: UUID | None = None) -> User | None:
    record = await conn.fetchrow(
        f"SELECT {_USER} FROM {_FROM} WHERE u.id = $1 AND ($2::uuid IS NULL OR u.client_id = $2)",
        user_id,
        client_id,
    )
    return _user(record) if record is not None else None


async def find_by_email(conn: Connection, email: str) -> tuple[User, Credentials] | None:
    record = await conn.fetchrow(
        f"SELECT {_USER}, u.password_hash, u.totp_sealed, u.totp_last_step"
        f" FROM {_FROM} WHERE lower(u.email) = lower($1)",
        email.strip(),
    )
    if record is None:
        return None
    user = _user(record)
    return user, Credentials(
        record["password_hash"], record["totp_sealed"], user.totp_on, record["totp_last_step"]
    )


async def credentials(conn: Connection, user_id: UUID) -> Credentials | None:
    record = await conn.fetchrow(
        "SELECT password_hash, totp_sealed, totp_enabled_at IS NOT NULL AS totp_on,"
        " totp_last_step FROM console_users WHERE id = $1",
        user_id,
    )
    if record is None:
        return None
    return Credentials(
        record["password_hash"], record["totp_sealed"], record["totp_on"], record["totp_last_step"]
    )


async def list_users(conn: Connection, client_id: UUID | None = None) -> list[User]:
    records = await conn.fetch(
        f"SELECT {_USER} FROM {_FROM} WHERE ($1::uuid IS NULL OR u.client_id = $1)"
        " ORDER BY c.name, u.created_at",
        client_id,
    )
    return [_user(r) for r in records]


async def active_owners(conn: Connection, client_id: UUID) -> int:
    """The client's owners that are not disabled (locked: a concurrent demotion of the
    other owner waits, so two cannot leave the client without one)."""
    rows = await conn.fetch(
        "SELECT id FROM console_users WHERE client_id = $1 AND role = 'owner'"
        " AND disabled_at IS NULL FOR UPDATE",
        client_id,
    )
    return len(rows)


async def set_role(conn: Connection, client_id: UUID, user_id: UUID, role: Role) -> User | None:
    status = await conn.execute(
        "UPDATE console_users SET role = $3, updated_at = now() WHERE id = $1 AND client_id = $2",
        user_id,
        client_id,
        role.value,
    )
    return await get(conn, user_id) if status == "UPDATE 1" else None


async def disable(conn: Connection, user_id: UUID) -> User | None:
    """Disable the user (idempotent) and end its sessions; None if there is no such user."""
    status = await conn.execute(
        "UPDATE console_users SET disabled_at = coalesce(disabled_at, now()), updated_at = now()"
        " WHERE id = $1",
        user_id,
    )
    if status != "UPDATE 1":
        return None
    await revoke_sessions(conn, user_id)
    return await get(conn, user_id)


async def enable(conn: Connection, user_id: UUID) -> User | None:
    status = await conn.execute(
        "UPDATE console_users SET disabled_at = NULL, updated_at = now() WHERE id = $1", user_id
    )
    return await get(conn, user_id) if status == "UPDATE 1" else None


async def revoke_sessions(conn: Connection, user_id: UUID, keep: str | None = None) -> int:
    """End every session (and second-factor challenge) of the user, but ``keep`` (an id hash)."""
    status: str = await conn.execute(
        "UPDATE console_sessions SET revoked_at = now()"
        " WHERE user_id = $1 AND revoked_at IS NULL AND id_hash IS DISTINCT FROM $2",
        user_id,
        keep,
    )
    return int(status.rsplit(maxsplit=1)[-1])


async def set_password(
    conn: Connection, user_id: UUID, password_hash: str, *, keep_session: str | None = None
) -> None:
    """A new password; every other session of the user ends (and its unused links)."""
    await conn.execute(
        "UPDATE console_users SET password_hash = $2, password_changed_at = now(),"
        " updated_at = now() WHERE id = $1",
        user_id,
        password_hash,
    )
    await conn.execute(
        "UPDATE console_signin_links SET used_at = now() WHERE user_id = $1 AND used_at IS NULL",
        user_id,
    )
    await revoke_sessions(conn, user_id, keep=keep_session)


async def new_link(conn: Connection, user_id: UUID, token_hash: str, expires_at: datetime) -> None:
    await conn.execute(
        "INSERT INTO console_signin_links (token_hash, user_id, expires_at) VALUES ($1, $2, $3)",
        token_hash,
        user_id,
        expires_at,
    )


async def use_link(conn: Connection, token_hash: str, now: datetime) -> UUID | None:
    """Spend the link (once, before its end); the user it signs in, None otherwise."""
    found: UUID | None = await conn.fetchval(
        "UPDATE console_signin_links SET used_at = $2"
        " WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id",
        token_hash,
        now,
    )
    return found


async def start_totp(conn: Connection, user_id: UUID, sealed: bytes) -> None:
    """Store a new secret, not yet on (until :func:`set_totp` after a first good code)."""
    await conn.execute(
        "UPDATE console_users SET totp_sealed = $2, totp_enabled_at = NULL,"
        " totp_last_step = NULL, updated_at = now() WHERE id = $1",
        user_id,
        sealed,
    )


async def set_totp(conn: Connection, user_id: UUID, step: int, code_hashes: list[str]) -> bool:
    """Turn the stored secret on (its first code's ``step`` accepted) with fresh recovery
    codes; False if the secret was not waiting or the step was used."""
    status = await conn.execute(
        "UPDATE console_users SET totp_enabled_at = now(), totp_last_step = $2,"
        " updated_at = now() WHERE id = $1 AND totp_sealed IS NOT NULL"
        " AND totp_enabled_at IS NULL AND (totp_last_step IS NULL OR totp_last_step < $2)",
        user_id,
        step,
    )
    if status != "UPDATE 1":
        return False
    await conn.execute("DELETE FROM console_recovery_codes WHERE user_id = $1", user_id)
    await conn.executemany(
        "INSERT INTO console_recovery_codes (user_id, code_hash) VALUES ($1, $2)",
        [(user_id, code) for code in code_hashes],
    )
    return True


async def turn_off_totp(conn: Connection, user_id: UUID) -> None:
    await conn.execute(
        "UPDATE console_users SET totp_sealed = NULL, totp_enabled_at = NULL,"
        " totp_last_step = NULL, updated_at = now() WHERE id = $1",
        user_id,
    )
    await conn.execute("DELETE FROM console_recovery_codes WHERE user_id = $1", user_id)


async def accept_totp_step(conn: Connection, user_id: UUID, step: int) -> bool:
    """Record ``step`` as used; False if it (or a later one) was used already."""
    status = await conn.execute(
        "UPDATE console_users SET totp_last_step = $2 WHERE id = $1"
        " AND (totp_last_step IS NULL OR totp_last_step < $2)",
        user_id,
        step,
    )
    return bool(status == "UPDATE 1")


async def use_recovery_code(conn: Connection, user_id: UUID, code_hash: str) -> bool:
    status = await conn.execute(
        "UPDATE console_recovery_codes SET used_at = now()"
        " WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL",
        user_id,
        code_hash,
    )
    return bool(status == "UPDATE 1")


async def unused_recovery_codes(conn: Connection, user_id: UUID) -> int:
    found: int = await conn.fetchval(
        "SELECT count(*) FROM console_recovery_codes WHERE user_id = $1 AND used_at IS NULL",
        user_id,
    )
    return found
