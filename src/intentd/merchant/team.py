"""A client's console users and policies, changed by an owner (or the operator's CLI),
each change with its audit record in the same transaction.

A client never loses its last active owner: demoting or disabling it is refused
(:class:`LastOwner`), under a lock of the client's owners, so two owners demoting each
other at once cannot both succeed. A one-time sign-in link is a random token of which
only the hash is kept; the link itself is returned once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from uuid import UUID

from intentd.access.actors import Actor
from intentd.access.roles import Role
from intentd.access.tokens import random_token, token_hash
from intentd.adapters.postgres import Connection, audit_log, console_users, refund_approvals
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.console_users import User

__all__ = [
    "LastOwner",
    "disable",
    "enable",
    "invite",
    "link_url",
    "new_link",
    "set_role",
    "set_threshold",
]


class LastOwner(Exception):
    """The change would leave the client without an active owner."""


def link_url(base: str, token: str) -> str:
    """The sign-in link of ``token`` (in the fragment: never sent to a server or logged)."""
    return f"{base.rstrip('/')}/console/signin#link={token}"


async def _audit(conn: Connection, actor: Actor, action: str, user: User, **detail: object) -> None:
    actor = Actor(actor.kind, actor.id, actor.label, user.client_id, actor.source, actor.role)
    await audit_log.record(
        conn, actor, AuditEntry(action, "user", str(user.id), "ok", None, detail)
    )


async def _link(conn: Connection, user: User, now: datetime, lifetime: timedelta) -> str:
    token = random_token()
    await console_users.new_link(conn, user.id, token_hash(token), now + lifetime)
    return token


async def invite(
    conn: Connection,
    actor: Actor,
    client_id: UUID,
    email: str,
    role: Role,
    *,
    now: datetime,
    lifetime: timedelta,
) -> tuple[User, str]:
    """A new user and its first sign-in link's token; ``console_users.UserExists``."""
    async with conn.transaction():
        user = await console_users.create(conn, client_id, email, role)
        token = await _link(conn, user, now, lifetime)
        await _audit(conn, actor, "user.create", user, email=user.email, role=role.value)
    return user, token


async def new_link(
    conn: Connection, actor: Actor, user: User, *, now: datetime, lifetime: timedelta
) -> str:
    """A fresh sign-in link (to set a new password), e.g. for a user locked out."""
    async with conn.transaction():
        token = await _link(conn, user, now, lifetime)
        await _audit(conn, actor, "user.link", user)
    return token


async def set_role(conn: Connection, actor: Actor, user: User, role: Role) -> User:
    async with conn.transaction():
        if user.role is Role.OWNER and role is not Role.OWNER:
            await _keep_an_owner(conn, user)
        changed = await console_users.set_role(conn, user.client_id, user.id, role)
        assert changed is not None
        await _audit(conn, actor, "user.role", user, before=user.role.value, after=role.value)
    return changed


async def disable(conn: Connection, actor: Actor, user: User) -> User:
    async with conn.transaction():
        if user.role is Role.OWNER and user.active:
            await _keep_an_owner(conn, user)
        changed = await console_users.disable(conn, user.id)
        assert changed is not None
        await _audit(conn, actor, "user.disable", user)
    return changed


async def enable(conn: Connection, actor: Actor, user: User) -> User:
    async with conn.transaction():
        changed = await console_users.enable(conn, user.id)
        assert changed is not None
        await _audit(conn, actor, "user.enable", user)
    return changed


async def _keep_an_owner(conn: Connection, user: User) -> None:
    if await console_users.active_owners(conn, user.client_id) <= 1:
        raise LastOwner(f"{user.email} is the client's last active owner; make another owner first")


async def set_threshold(
    conn: Connection, actor: Actor, value: Decimal | None, *, mode: str | None = None
) -> None:
    """The client's refund approval threshold in USD (None: no approval)."""
    async with conn.transaction():
        await refund_approvals.set_threshold(conn, actor.client_id, value)
        await audit_log.record(
            conn,
            actor,
            AuditEntry(
                "policy.refund_approval",
                "client",
                str(actor.client_id),
                "ok",
                mode,
                {"refund_approval_above_usd": str(value) if value is not None else None},
            ),
        )
