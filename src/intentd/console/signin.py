"""Signing in to the console: password, second factor, one-time links, sessions.

Every step answers the same ``invalid_credentials`` for an unknown email, a wrong
password, a disabled account or an account without a password yet, after the same
argon2id work, so an answer never tells whether an account exists. Failures count
against the source address and the account (or, from one of the account's devices,
that device) with locks that end by themselves (:mod:`intentd.access.throttle`);
locked sign-ins are answered 429 before any password is checked.

A session is created only after every factor passed: a fresh random id each time
(never one the browser brought: no session fixation), its hash stored, its CSRF token
beside it. A successful sign-in also gives the browser a device cookie, which later
lets it sign in while the account is locked by failures from elsewhere.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from intentd.access import passwords
from intentd.access.actors import Actor
from intentd.access.second_factor import code_hash, totp_step
from intentd.access.tokens import random_token, token_hash
from intentd.adapters.postgres import Connection, audit_log, console_sessions, console_users
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.console_users import User
from intentd.api.context import Services
from intentd.api.problems import ApiProblem
from intentd.console.signin_gate import Gate, gate_for
from intentd.console.state import ConsoleState
from intentd.console.web import CHALLENGE_SECONDS, DEVICE_DAYS
from intentd.webhooks.secret_box import SecretBoxError

__all__ = [
    "Challenge",
    "Request",
    "SignedIn",
    "change_password",
    "password_step",
    "redeem_link",
    "second_step",
    "start_session",
]

MAX_CHALLENGE_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Request:
    """Where a sign-in comes from."""

    source: str | None
    user_agent: str
    device: str | None
    """The device cookie the browser sent, if any."""
    now: datetime


@dataclass(frozen=True, slots=True)
class SignedIn:
    user: User
    session: str
    """The new session's id (the cookie's value), shown to this browser only."""
    device: str | None
    """A new device cookie to set (None: the browser's one stays)."""


@dataclass(frozen=True, slots=True)
class Challenge:
    """The password was right; the second factor is asked for (``challenge``: its cookie)."""

    user: User
    challenge: str


def _invalid() -> ApiProblem:
    return ApiProblem(401, "invalid_credentials", "the email or the password is wrong")


async def _hash(state: ConsoleState, password: str) -> str:
    async with state.hashing:
        return await asyncio.to_thread(passwords.hash_password, password)


async def _check(state: ConsoleState, stored: str | None, password: str) -> bool:
    async with state.hashing:
        return await asyncio.to_thread(passwords.check_password, stored, password)


def _actor(user: User, source: str | None) -> Actor:
    return Actor("user", str(user.id), user.email, user.client_id, source, user.role)


async def _audit(
    conn: Connection, user: User, source: str | None, action: str, result: str, **detail: object
) -> None:
    await audit_log.record(
        conn,
        _actor(user, source),
        AuditEntry(action, "user", str(user.id), result, None, detail),
    )


async def start_session(
    conn: Connection, state: ConsoleState, user: User, request: Request, *, trusted: bool
) -> SignedIn:
    token = random_token()
    await console_sessions.create(
        conn,
        id_hash=token_hash(token),
        user_id=user.id,
        kind="session",
        csrf_token=random_token(),
        expires_at=request.now + state.absolute,
        source=request.source,
        user_agent=request.user_agent,
    )
    device = None
    if not trusted:
        device = random_token()
        await console_sessions.add_device(
            conn, token_hash(device), user.id, request.now + timedelta(days=DEVICE_DAYS)
        )
    return SignedIn(user, token, device)


async def _challenge(conn: Connection, user: User, request: Request) -> Challenge:
    token = random_token()
    await console_sessions.create(
        conn,
        id_hash=token_hash(token),
        user_id=user.id,
        kind="challenge",
        csrf_token=random_token(),
        expires_at=request.now + timedelta(seconds=CHALLENGE_SECONDS),
        source=request.source,
        user_agent=request.user_agent,
    )
    return Challenge(user, token)


async def password_step(
    services: Services, state: ConsoleState, email: str, password: str, request: Request
) -> SignedIn | Challenge:
    async with services.connection() as conn:
        found = await console_users.find_by_email(conn, email)
        user, credentials = found if found is not None else (None, None)
        gate, trusted = await gate_for(
            conn,
            state,
            source=request.source,
            device=request.device,
            email=email,
            user=user,
            now=request.now,
        )
        await gate.admit(conn, request.now)
    stored = credentials.password_hash if credentials is not None else None
    good = await _check(state, stored, password)
    async with services.connection() as conn, conn.transaction():
        if not good or user is None or not user.active:
            if user is not None:  # counted already, when it was admitted
                await _audit(conn, user, request.source, "user.signin", "failed", step="password")
            failed = True
        else:
            failed = False
            await gate.succeed(conn, request.now)
            if user.totp_on:
                return await _challenge(conn, user, request)
            await _audit(conn, user, request.source, "user.signin", "ok", second_factor=None)
            return await start_session(conn, state, user, request, trusted=trusted)
    assert failed
    raise _invalid()


async def second_step(
    services: Services,
    state: ConsoleState,
    challenge: str | None,
    *,
    code: str | None,
    recovery_code: str | None,
    request: Request,
) -> SignedIn:
    """The second factor of a challenge: a TOTP code, or one of the recovery codes."""
    if state.totp_box is None:
        raise ApiProblem(503, "totp_unavailable", "the second factor is not configured here")
    if not challenge:
        raise ApiProblem(401, "challenge_expired", "sign in with your password again")
    async with services.connection() as conn:
        row = await console_sessions.find(conn, token_hash(challenge))
        if (
            row is None
            or row.kind != "challenge"
            or row.times.revoked_at is not None
            or row.times.expires_at <= request.now
            or row.disabled
        ):
            raise ApiProblem(401, "challenge_expired", "sign in with your password again")
        user = await console_users.get(conn, row.user_id)
        credentials = await console_users.credentials(conn, row.user_id)
        assert user is not None
        assert credentials is not None
        gate, trusted = await gate_for(
            conn,
            state,
            source=request.source,
            device=request.device,
            email=user.email,
            user=user,
            now=request.now,
        )
        await gate.admit(conn, request.now)
        async with conn.transaction():
            # this attempt counts on the challenge too, before it is checked (the row
            # stays locked: attempts on one challenge are checked one at a time)
            attempts = await console_sessions.count_attempt(conn, row.id_hash)
            if attempts is None or attempts > MAX_CHALLENGE_ATTEMPTS:
                raise ApiProblem(401, "challenge_expired", "sign in with your password again")
            accepted = False
            used = "totp"
            if code and credentials.totp_sealed is not None:
                try:
                    secret = state.totp_box.open(credentials.totp_sealed, user.id)
                except SecretBoxError:
                    raise ApiProblem(
                        503, "totp_unavailable", "the second factor cannot be read here"
                    ) from None
                step = totp_step(secret, code, request.now.timestamp(), credentials.totp_last_step)
                accepted = step is not None and await console_users.accept_totp_step(
                    conn, user.id, step
                )
            elif recovery_code:
                used = "recovery_code"
                accepted = await console_users.use_recovery_code(
                    conn, user.id, code_hash(recovery_code)
                )
            if accepted:
                await console_sessions.revoke(conn, row.id_hash)
                await gate.succeed(conn, request.now)
                await _audit(conn, user, request.source, "user.signin", "ok", second_factor=used)
                return await start_session(conn, state, user, request, trusted=trusted)
            if attempts >= MAX_CHALLENGE_ATTEMPTS:
                await console_sessions.revoke(conn, row.id_hash)
            await _audit(conn, user, request.source, "user.signin", "failed", step=used)
    raise ApiProblem(401, "invalid_code", "the code is wrong or was used already")


async def redeem_link(
    services: Services, state: ConsoleState, token: str, password: str, request: Request
) -> SignedIn | Challenge:
    """Spend a one-time sign-in link: set the password, then sign in (a user with a
    second factor is asked for it, as at any sign-in). A password refused as weak
    leaves the link unspent and is not counted as a failed attempt."""
    link_key = f"link:{request.source or 'unknown'}"
    gate = Gate(state, request.source, link_key, state.throttle.source_limit)
    async with services.connection() as conn:
        await gate.admit(conn, request.now)
    new_hash = await _hash(state, password) if len(password) <= passwords.MAX_LENGTH else ""
    async with services.connection() as conn:
        try:
            spent = await _spend_link(
                conn,
                state=state,
                gate=gate,
                token=token,
                password=password,
                new_hash=new_hash,
                request=request,
            )
        except _WeakPassword as weak:
            async with conn.transaction():
                await gate.succeed(conn, request.now, clear_gate=False)
            raise ApiProblem(422, "weak_password", weak.problem, field="password") from None
    if spent is None:  # unknown, used or expired: the attempt stays counted, as admitted
        raise ApiProblem(401, "invalid_link", "this sign-in link is unknown, used or expired")
    return spent


async def _spend_link(
    conn: Connection,
    *,
    state: ConsoleState,
    gate: Gate,
    token: str,
    password: str,
    new_hash: str,
    request: Request,
) -> SignedIn | Challenge | None:
    """In one transaction: the link spent, the password set, the attempt given back and
    the session (or the challenge) begun; None for a link that does not work.
    :class:`_WeakPassword` rolls it all back (the link stays unspent)."""
    async with conn.transaction():
        user_id = await console_users.use_link(conn, token_hash(token), request.now)
        user = await console_users.get(conn, user_id) if user_id is not None else None
        if user is None or not user.active:
            return None
        problem = passwords.password_problem(password, user.email)
        if problem is not None:
            raise _WeakPassword(problem)
        await console_users.set_password(conn, user.id, new_hash)
        await _audit(conn, user, request.source, "user.password_set", "ok", via="link")
        await gate.succeed(conn, request.now, clear_gate=False)
        if user.totp_on:
            return await _challenge(conn, user, request)
        return await start_session(conn, state, user, request, trusted=False)


class _WeakPassword(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


async def change_password(
    services: Services,
    state: ConsoleState,
    user_id: UUID,
    *,
    current: str,
    new: str,
    request: Request,
) -> SignedIn:
    """A new password, given the current one: every session of the user ends and this
    browser gets a new one."""
    async with services.connection() as conn:
        user = await console_users.get(conn, user_id)
        credentials = await console_users.credentials(conn, user_id)
    assert user is not None
    assert credentials is not None
    if not await _check(state, credentials.password_hash, current):
        raise ApiProblem(403, "wrong_password", "the current password is wrong", field="current")
    problem = passwords.password_problem(new, user.email)
    if problem is not None:
        raise ApiProblem(422, "weak_password", problem, field="password")
    new_hash = await _hash(state, new)
    async with services.connection() as conn, conn.transaction():
        await console_users.set_password(conn, user.id, new_hash)
        await _audit(conn, user, request.source, "user.password_change", "ok")
        return await start_session(conn, state, user, request, trusted=True)
