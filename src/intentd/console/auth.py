"""Who is calling the console: the session behind the cookie, its role's permission,
and the CSRF checks of every state-changing request.

A request is signed in when its session cookie names a session that is not revoked,
not past its absolute end, not idle too long (``access.session_policy``), of a user
who is not disabled: the user and role are read with the session on every request,
so disabling a user or changing a role applies at once. Otherwise: 401
``signed_out`` (the page goes to sign-in).

State-changing requests (anything but GET and HEAD) must also carry the session's
CSRF token in ``X-CSRF-Token`` and, when the browser sends them, an ``Origin`` of this
host and a ``Sec-Fetch-Site`` of ``same-origin``: else 403 ``csrf_failed``. The cookie
is ``SameSite=Strict`` besides, so another site's page never sends it.

:class:`Require` is the dependency of every console operation: it names the
:class:`~intentd.access.roles.Permission` the operation needs and answers 403
``forbidden_for_role`` to a role without it; a refused change is written to the audit
log (result ``denied``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated
from urllib.parse import urlsplit
from uuid import UUID

from fastapi import Depends, Request

from intentd.access.actors import Actor
from intentd.access.roles import Permission, Role, allowed
from intentd.access.session_policy import SessionState, session_state, should_touch
from intentd.access.tokens import same_token, token_hash
from intentd.adapters.postgres import audit_log, console_sessions
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.console_sessions import SessionRow
from intentd.api.context import Services
from intentd.api.problems import ApiProblem
from intentd.console.web import cookies_of, source

__all__ = ["ConsoleUser", "Require", "SignedIn", "check_origin", "signed_in"]

SAFE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True, slots=True)
class ConsoleUser:
    session: SessionRow
    source: str | None

    @property
    def role(self) -> Role:
        return self.session.role

    @property
    def client_id(self) -> UUID:
        return self.session.client_id

    def actor(self) -> Actor:
        return Actor(
            "user",
            str(self.session.user_id),
            self.session.email,
            self.session.client_id,
            self.source,
            self.session.role,
        )

    def may(self, permission: Permission) -> bool:
        return allowed(self.session.role, permission)


def signed_out(why: str) -> ApiProblem:
    return ApiProblem(401, "signed_out", f"sign in again ({why})")


def check_origin(request: Request) -> None:
    """403 ``csrf_failed`` for a request a browser says comes from another site."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise ApiProblem(403, "csrf_failed", f"a {site} request cannot change anything here")
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        host = request.headers.get("host", "")
        if urlsplit(origin).netloc.lower() != host.lower():
            raise ApiProblem(403, "csrf_failed", "the request comes from another origin")
    elif origin == "null":
        raise ApiProblem(403, "csrf_failed", "the request comes from an opaque origin")


async def signed_in(request: Request) -> ConsoleUser:
    services = Services.of(request)
    settings = services.settings.console
    token = request.cookies.get(cookies_of(services.settings).session)
    if not token:
        raise signed_out("no session")
    now = datetime.now(UTC)
    async with services.connection() as conn:
        row = await console_sessions.find(conn, token_hash(token))
        if row is None or row.kind != "session":
            raise signed_out("no such session")
        state = session_state(row.times, now, timedelta(minutes=settings.session_idle_minutes))
        if state is not SessionState.ACTIVE:
            raise signed_out(f"the session is {state.value}")
        if row.disabled:
            raise signed_out("the account is disabled")
        if request.method not in SAFE_METHODS:
            check_origin(request)
            if not same_token(request.headers.get("x-csrf-token"), row.csrf_token):
                raise ApiProblem(
                    403, "csrf_failed", "send the session's CSRF token in X-CSRF-Token"
                )
        if should_touch(row.times, now):
            await console_sessions.touch(conn, row.id_hash)
    return ConsoleUser(row, source(request))


SignedIn = Annotated[ConsoleUser, Depends(signed_in)]


class Require:
    """The dependency of an operation that needs ``permission``."""

    def __init__(self, permission: Permission) -> None:
        self.permission = permission

    async def __call__(self, request: Request, user: SignedIn) -> ConsoleUser:
        if user.may(self.permission):
            return user
        if request.method not in SAFE_METHODS:
            services = Services.of(request)
            async with services.connection() as conn:
                await audit_log.record(
                    conn,
                    user.actor(),
                    AuditEntry(
                        self.permission.value,
                        "console",
                        request.url.path,
                        "denied",
                        None,
                        {"role": user.role.value, "method": request.method},
                    ),
                )
        raise ApiProblem(
            403,
            "forbidden_for_role",
            f"the role {user.role.value} may not do this ({self.permission.value})",
        )
