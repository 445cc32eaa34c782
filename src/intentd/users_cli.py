"""``intentd users create|list|disable|enable|link``: console users from the command line.

``users create --client NAME --email E --role ROLE`` records the user and prints, once,
a one-time sign-in link (no mail server is assumed: give the link to the person); the
person opens it, chooses a password and is signed in. ``users link`` prints a fresh
link for an existing user (a forgotten password, a user locked out by failed
sign-ins: a link is never held back by them). ``users disable`` ends the user's
sessions at once. Every change is in the client's audit log, by ``cli``. A client's
last active owner cannot be disabled (exit 4).

Exit codes as ``intentd``'s: 3 a request that cannot be served (bad email, unknown
role), 4 something that does not exist or a refused change.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from uuid import UUID

from intentd.access.actors import Actor
from intentd.access.roles import Role
from intentd.adapters.postgres import Connection, clients, console_users, create_pool
from intentd.adapters.postgres.console_users import User, UserExists
from intentd.merchant import team
from intentd.settings import Settings

__all__ = ["add_users_parser", "users_command"]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def add_users_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    users = sub.add_parser(
        "users", help="console users: create (prints a sign-in link), list, disable"
    )
    usub = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    create = usub.add_parser("create", help="record a user and print a one-time sign-in link")
    create.add_argument("--client", required=True, help="an existing client's id or name")
    create.add_argument("--email", required=True)
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    listing = usub.add_parser("list", help="list users (of one client with --client)")
    listing.add_argument("--client", help="an existing client's id or name")
    for name, text in (
        ("disable", "disable a user: it cannot sign in, its sessions end at once"),
        ("enable", "enable a disabled user again"),
        ("link", "print a fresh one-time sign-in link (to set a new password)"),
    ):
        action = usub.add_parser(name, help=text)
        action.add_argument("user", help="the user's email or id")


def _describe(user: User) -> dict[str, object]:
    return {
        "user_id": str(user.id),
        "client": user.client_name,
        "client_id": str(user.client_id),
        "email": user.email,
        "role": user.role.value,
        "active": user.active,
        "has_password": user.has_password,
        "totp_on": user.totp_on,
        "created_at": user.created_at.isoformat(),
    }


def _base_url(settings: Settings) -> str:
    return settings.console.public_url or f"http://{settings.api.host}:{settings.api.port}"


def _fail(message: str, code: int) -> int:
    print(f"intentd: {message}", file=sys.stderr)
    return code


async def _find_user(conn: Connection, ref: str) -> User | None:
    try:
        return await console_users.get(conn, UUID(ref))
    except ValueError:
        found = await console_users.find_by_email(conn, ref)
        return found[0] if found is not None else None


async def users_command(args: argparse.Namespace, settings: Settings) -> int:
    pool = await create_pool(settings.database.url.get_secret_value(), max_size=1)
    lifetime = timedelta(hours=settings.console.signin_link_hours)
    now = datetime.now(UTC)
    try:
        async with pool.acquire() as conn:
            match args.users_command:
                case "create":
                    email = args.email.strip()
                    if not _EMAIL.match(email) or len(email) > 254:
                        return _fail(f"{email!r} is not an email address", 3)
                    client = await clients.find(conn, args.client.strip())
                    if client is None:
                        return _fail(
                            f"no client {args.client.strip()!r}; create it first:"
                            " intentd clients create NAME",
                            4,
                        )
                    try:
                        user, token = await team.invite(
                            conn,
                            Actor.cli(client.id),
                            client.id,
                            email,
                            Role(args.role),
                            now=now,
                            lifetime=lifetime,
                        )
                    except UserExists as exc:
                        return _fail(str(exc), 4)
                    link = team.link_url(_base_url(settings), token)
                    print(json.dumps({**_describe(user), "signin_link": link}, indent=2))
                    print(
                        "intentd: give the sign-in link to the user; it works once, until"
                        f" {(now + lifetime).isoformat()}",
                        file=sys.stderr,
                    )
                    return 0
                case "list":
                    client_id = None
                    if args.client:
                        client = await clients.find(conn, args.client.strip())
                        if client is None:
                            return _fail(f"no client {args.client.strip()!r}", 4)
                        client_id = client.id
                    found = await console_users.list_users(conn, client_id)
                    print(json.dumps([_describe(u) for u in found], indent=2))
                    return 0
                case "disable" | "enable" | "link":
                    return await _change(conn, args, settings, now, lifetime)
        raise AssertionError(f"unhandled users command {args.users_command}")
    finally:
        await pool.close()


async def _change(
    conn: Connection,
    args: argparse.Namespace,
    settings: Settings,
    now: datetime,
    lifetime: timedelta,
) -> int:
    user = await _find_user(conn, args.user.strip())
    if user is None:
        return _fail(f"no user {args.user.strip()!r}", 4)
    actor = Actor.cli(user.client_id)
    if args.users_command == "link":
        token = await team.new_link(conn, actor, user, now=now, lifetime=lifetime)
        link = team.link_url(_base_url(settings), token)
        print(json.dumps({**_describe(user), "signin_link": link}, indent=2))
        return 0
    try:
        if args.users_command == "disable":
            changed = await team.disable(conn, actor, user)
        else:
            changed = await team.enable(conn, actor, user)
    except team.LastOwner as exc:
        return _fail(str(exc), 4)
    print(json.dumps(_describe(changed), indent=2))
    return 0
