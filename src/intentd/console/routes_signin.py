"""``/console/api`` sign-in, sign-out, the session, a user's own password and second factor.

Sign-in requests carry no session yet: they are checked like every state-changing
request for their origin (``auth.check_origin``) and take JSON bodies only, which
another site's form cannot send. The session cookie is set only once every factor
passed, with a new random id.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from intentd.access import passwords
from intentd.access.roles import PERMISSIONS
from intentd.access.second_factor import (
    code_hash,
    new_recovery_codes,
    new_totp_secret,
    otpauth_uri,
    totp_step,
)
from intentd.adapters.postgres import audit_log, console_sessions, console_users
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.api.context import Services, json_response, read_body
from intentd.api.problems import ApiProblem
from intentd.console import signin
from intentd.console.auth import SignedIn, check_origin
from intentd.console.state import ConsoleState
from intentd.console.web import CHALLENGE_SECONDS, CONSOLE_API, DEVICE_DAYS, source
from intentd.contract.events import EventType
from intentd.contract.mode import mode_of

__all__ = ["router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SigninBody(_Body):
    email: str = Field(min_length=3, max_length=254)
    password: str = Field(min_length=1, max_length=1024)


class SecondFactorBody(_Body):
    code: str | None = Field(default=None, max_length=16)
    recovery_code: str | None = Field(default=None, max_length=32)


class LinkBody(_Body):
    token: str = Field(min_length=20, max_length=100)
    password: str = Field(min_length=1, max_length=1024)


class PasswordBody(_Body):
    current: str = Field(min_length=1, max_length=1024)
    password: str = Field(min_length=1, max_length=1024)


class CodeBody(_Body):
    code: str = Field(min_length=6, max_length=16)


class _PasswordOnly(_Body):
    current: str = Field(min_length=1, max_length=1024)


def _request(request: Request) -> signin.Request:
    state = ConsoleState.of(request)
    return signin.Request(
        source=source(request),
        user_agent=request.headers.get("user-agent", ""),
        device=request.cookies.get(state.cookies.device),
        now=datetime.now(UTC),
    )


def _answer(request: Request, outcome: signin.SignedIn | signin.Challenge) -> Response:
    state = ConsoleState.of(request)
    cookies = state.cookies
    if isinstance(outcome, signin.Challenge):
        response = json_response({"second_factor": "totp"})
        cookies.set(response, cookies.challenge, outcome.challenge, CHALLENGE_SECONDS)
        return response
    response = json_response({"signed_in": True})
    cookies.set(response, cookies.session, outcome.session, int(state.absolute.total_seconds()))
    cookies.clear(response, cookies.challenge)
    if outcome.device is not None:
        cookies.set(response, cookies.device, outcome.device, DEVICE_DAYS * 86_400)
    return response


@router.post("/signin")
async def sign_in(request: Request) -> Response:
    check_origin(request)
    body = await read_body(request, SigninBody)
    services, state = Services.of(request), ConsoleState.of(request)
    outcome = await signin.password_step(
        services, state, body.email, body.password, _request(request)
    )
    return _answer(request, outcome)


@router.post("/signin/second-factor")
async def second_factor(request: Request) -> Response:
    check_origin(request)
    body = await read_body(request, SecondFactorBody)
    services, state = Services.of(request), ConsoleState.of(request)
    outcome = await signin.second_step(
        services,
        state,
        request.cookies.get(state.cookies.challenge),
        code=body.code,
        recovery_code=body.recovery_code,
        request=_request(request),
    )
    return _answer(request, outcome)


@router.post("/signin/link")
async def sign_in_with_link(request: Request) -> Response:
    check_origin(request)
    body = await read_body(request, LinkBody)
    services, state = Services.of(request), ConsoleState.of(request)
    outcome = await signin.redeem_link(
        services, state, body.token, body.password, _request(request)
    )
    return _answer(request, outcome)


@router.post("/signout")
async def sign_out(request: Request, user: SignedIn) -> Response:
    services, state = Services.of(request), ConsoleState.of(request)
    async with services.connection() as conn, conn.transaction():
        await console_sessions.revoke(conn, user.session.id_hash)
        await audit_log.record(
            conn, user.actor(), AuditEntry("user.signout", "user", str(user.session.user_id))
        )
    response = json_response({"signed_in": False})
    state.cookies.clear(response, state.cookies.session)
    return response


@router.get("/session")
async def session(request: Request, user: SignedIn) -> Response:
    """Who is signed in, what they may do, the CSRF token, the modes and chains."""
    services = Services.of(request)
    settings = services.settings
    chains = [
        {
            "name": name,
            "mode": mode_of(chain.network),
            "chain_id": chain.chain_id,
            "explorer_url": chain.explorer_url or None,
        }
        for name, chain in sorted(settings.chains.items())
    ]
    modes = sorted({c["mode"] for c in chains}, key=lambda m: m != "live")
    row = user.session
    body: dict[str, Any] = {
        "user": {
            "id": str(row.user_id),
            "email": row.email,
            "role": row.role.value,
            "client": row.client_name,
            "totp_on": row.totp_on,
        },
        "permissions": sorted(p.value for p in PERMISSIONS[row.role]),
        "csrf_token": row.csrf_token,
        "modes": modes,
        "chains": chains,
        "totp_available": ConsoleState.of(request).totp_box is not None,
        "idle_minutes": settings.console.session_idle_minutes,
        # the pages' event type choices (webhook subscriptions, the event log's filter)
        "event_types": [event_type.value for event_type in EventType],
    }
    return json_response(body)


@router.post("/me/password")
async def change_password(request: Request, user: SignedIn) -> Response:
    body = await read_body(request, PasswordBody)
    services, state = Services.of(request), ConsoleState.of(request)
    outcome = await signin.change_password(
        services,
        state,
        user.session.user_id,
        current=body.current,
        new=body.password,
        request=_request(request),
    )
    return _answer(request, outcome)


@router.post("/me/totp/start")
async def totp_start(request: Request, user: SignedIn) -> Response:
    """A new secret for the user's authenticator app, waiting for its first code."""
    services, state = Services.of(request), ConsoleState.of(request)
    if state.totp_box is None:
        raise ApiProblem(503, "totp_unavailable", "the second factor is not configured here")
    if user.session.totp_on:
        raise ApiProblem(409, "totp_on", "the second factor is on; turn it off first")
    secret = new_totp_secret()
    async with services.connection() as conn:
        await console_users.start_totp(
            conn, user.session.user_id, state.totp_box.seal(secret, user.session.user_id)
        )
    return json_response({"secret": secret, "uri": otpauth_uri(secret, user.session.email)})


@router.post("/me/totp/confirm")
async def totp_confirm(request: Request, user: SignedIn) -> Response:
    """Turn the second factor on with a first good code; the recovery codes, shown once."""
    body = await read_body(request, CodeBody)
    services, state = Services.of(request), ConsoleState.of(request)
    if state.totp_box is None:
        raise ApiProblem(503, "totp_unavailable", "the second factor is not configured here")
    user_id = user.session.user_id
    async with services.connection() as conn:
        credentials = await console_users.credentials(conn, user_id)
        if credentials is None or credentials.totp_sealed is None or credentials.totp_on:
            raise ApiProblem(409, "totp_not_started", "start the second factor's setup first")
        secret = state.totp_box.open(credentials.totp_sealed, user_id)
        step = totp_step(secret, body.code, datetime.now(UTC).timestamp(), None)
        if step is None:
            raise ApiProblem(422, "invalid_code", "the code is wrong; check the app's clock")
        codes = new_recovery_codes()
        async with conn.transaction():
            if not await console_users.set_totp(conn, user_id, step, [code_hash(c) for c in codes]):
                raise ApiProblem(409, "totp_not_started", "start the second factor's setup first")
            await audit_log.record(
                conn, user.actor(), AuditEntry("user.totp_on", "user", str(user_id))
            )
    return json_response({"recovery_codes": codes})


@router.post("/me/totp/off")
async def totp_off(request: Request, user: SignedIn) -> Response:
    body = await read_body(request, _PasswordOnly)
    services, state = Services.of(request), ConsoleState.of(request)
    user_id = user.session.user_id
    async with services.connection() as conn:
        credentials = await console_users.credentials(conn, user_id)
    assert credentials is not None
    async with state.hashing:
        good = await asyncio.to_thread(
            passwords.check_password, credentials.password_hash, body.current
        )
    if not good:
        raise ApiProblem(403, "wrong_password", "the current password is wrong", field="current")
    async with services.connection() as conn, conn.transaction():
        await console_users.turn_off_totp(conn, user_id)
        await audit_log.record(
            conn, user.actor(), AuditEntry("user.totp_off", "user", str(user_id))
        )
    return json_response({"totp_on": False})
