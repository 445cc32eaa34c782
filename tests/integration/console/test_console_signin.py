"""Signing in to the console over real HTTP: sessions, their ends, CSRF, fixation,
throttling that cannot lock an owner out for good, the second factor, one-time links."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pyotp
import pytest
from tests.integration.api.conftest import Api
from tests.integration.console.conftest import PASSWORD, Browser, Team, signed_in
from yarl import URL

from intentd.access.roles import Role
from intentd.access.tokens import token_hash
from intentd.adapters.postgres import Pool, console_users
from intentd.contract.events import EventType
from intentd.merchant import team as team_service

pytestmark = pytest.mark.integration
COOKIE = "intentd_console"


async def test_a_user_signs_in_reads_its_session_and_signs_out(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    browser = browsers()
    assert (await browser.call("GET", "/session"))[0] == 401
    status, body = await browser.sign_in(team.emails[Role.SUPPORT])
    assert (status, body) == (200, {"signed_in": True})
    session = await browser.refresh()
    assert session["user"]["role"] == "support"
    assert session["user"]["client"] == team.client_name
    assert "payments.refund" in session["permissions"]
    assert "team.write" not in session["permissions"]
    # the pages' event type choices come from the contract, not from a list in the JS
    assert session["event_types"] == [event_type.value for event_type in EventType]
    token = browser.cookie(COOKIE)
    assert token is not None
    stored = await pool.fetchval(
        "SELECT count(*) FROM console_sessions WHERE id_hash = $1", token_hash(token)
    )
    assert stored == 1
    assert (
        await pool.fetchval("SELECT count(*) FROM console_sessions WHERE id_hash = $1", token) == 0
    )
    assert (await browser.call("POST", "/signout"))[0] == 200
    assert (await browser.call("GET", "/session"))[0] == 401
    actions = await pool.fetch(
        "SELECT action, result FROM audit_log WHERE client_id = $1 ORDER BY id", team.client_id
    )
    assert [(r["action"], r["result"]) for r in actions] == [
        ("user.signin", "ok"),
        ("user.signout", "ok"),
    ]


async def test_the_cookie_is_httponly_and_strict(
    console_api: Api, team: Team, browsers: Callable[[], Browser]
) -> None:
    browser = browsers()
    async with browser.session.post(
        f"{console_api.url}/console/api/signin",
        json={"email": team.emails[Role.VIEWER], "password": PASSWORD},
    ) as response:
        cookies = response.headers.getall("Set-Cookie")
    session = next(c for c in cookies if c.startswith(f"{COOKIE}="))
    assert "HttpOnly" in session
    assert "SameSite=Strict" in session or "samesite=strict" in session.lower()
    assert "Path=/" in session


async def test_unknown_email_wrong_password_and_no_password_answer_alike(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    answers = []
    for email, password in (
        ("nobody@nowhere.example", PASSWORD),
        (team.emails[Role.VIEWER], PASSWORD + "x"),
    ):
        answers.append(await browsers().sign_in(email, password))
    async with pool.acquire() as conn:
        fresh = await console_users.create(
            conn, team.client_id, f"new-{secrets.token_hex(3)}@x.example", Role.VIEWER
        )
    answers.append(await browsers().sign_in(fresh.email, PASSWORD))
    assert {status for status, _ in answers} == {401}
    assert {body["code"] for _, body in answers} == {"invalid_credentials"}
    assert len({body["detail"] for _, body in answers}) == 1


async def test_a_session_ends_when_idle_at_its_absolute_end_and_when_its_user_is_disabled(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    idle = await signed_in(browsers, team.emails[Role.VIEWER])
    await pool.execute(
        "UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'"
        " WHERE id_hash = $1",
        token_hash(idle.cookie(COOKIE) or ""),
    )
    status, body = await idle.call("GET", "/session")
    assert (status, body["code"]) == (401, "signed_out")
    assert "idle" in body["detail"]

    old = await signed_in(browsers, team.emails[Role.VIEWER])
    await pool.execute(
        "UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id_hash = $1",
        token_hash(old.cookie(COOKIE) or ""),
    )
    assert (await old.call("GET", "/session"))[0] == 401

    support = await signed_in(browsers, team.emails[Role.SUPPORT])
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    async with pool.acquire() as conn:
        found = await console_users.find_by_email(conn, team.emails[Role.SUPPORT])
    assert found is not None
    status, _ = await owner.call("POST", f"/team/{found[0].id}/disable")
    assert status == 200
    status, body = await support.call("GET", "/overview")
    assert (status, body["code"]) == (401, "signed_out")
    assert (await browsers().sign_in(team.emails[Role.SUPPORT]))[0] == 401


async def test_a_password_change_ends_every_other_session_and_renews_this_one(
    browsers: Callable[[], Browser], team: Team
) -> None:
    first = await signed_in(browsers, team.emails[Role.DEVELOPER])
    second = await signed_in(browsers, team.emails[Role.DEVELOPER])
    before = first.cookie(COOKIE)
    status, body = await first.call(
        "POST", "/me/password", {"current": PASSWORD, "password": "a new long passphrase"}
    )
    assert status == 200, body
    assert first.cookie(COOKIE) != before
    await first.refresh()
    assert (await second.call("GET", "/session"))[0] == 401
    assert (await browsers().sign_in(team.emails[Role.DEVELOPER]))[0] == 401
    assert (await browsers().sign_in(team.emails[Role.DEVELOPER], "a new long passphrase"))[
        0
    ] == 200


async def test_csrf_every_change_needs_the_token_and_this_origin(
    browsers: Callable[[], Browser], team: Team, console_api: Api
) -> None:
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    body = {"refund_approval_above_usd": "100"}
    status, problem = await owner.call("PUT", "/policy", body, csrf=False)
    assert (status, problem["code"]) == (403, "csrf_failed")
    status, problem = await owner.call(
        "PUT", "/policy", body, headers={"X-CSRF-Token": "not-the-token"}
    )
    assert (status, problem["code"]) == (403, "csrf_failed")
    status, problem = await owner.call(
        "PUT", "/policy", body, headers={"Origin": "https://evil.example"}
    )
    assert (status, problem["code"]) == (403, "csrf_failed")
    status, problem = await owner.call(
        "PUT", "/policy", body, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert (status, problem["code"]) == (403, "csrf_failed")
    status, _ = await owner.call("PUT", "/policy", body, headers={"Origin": console_api.url})
    assert status == 200
    # signing in from another site is refused too (login CSRF)
    status, problem = await browsers().call(
        "POST",
        "/signin",
        {"email": team.emails[Role.OWNER], "password": PASSWORD},
        headers={"Origin": "https://evil.example"},
    )
    assert (status, problem["code"]) == (403, "csrf_failed")


async def test_session_fixation_a_cookie_the_browser_brought_is_never_adopted(
    browsers: Callable[[], Browser], team: Team, console_api: Api
) -> None:
    browser = browsers()
    planted = "attacker-chosen-session-id-" + secrets.token_hex(8)
    browser.session.cookie_jar.update_cookies({COOKIE: planted}, URL(console_api.url))
    assert (await browser.call("GET", "/session"))[0] == 401
    status, _ = await browser.sign_in(team.emails[Role.ADMIN])
    assert status == 200
    assert browser.cookie(COOKIE) != planted
    attacker = browsers()
    attacker.session.cookie_jar.update_cookies({COOKIE: planted}, URL(console_api.url))
    assert (await attacker.call("GET", "/session"))[0] == 401


async def test_failed_sign_ins_lock_new_browsers_for_a_while_but_not_the_owners_own(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    email = team.emails[Role.OWNER]
    known = await signed_in(browsers, email)  # the owner's browser: it holds a device cookie
    await known.call("POST", "/signout")
    attacker = browsers()
    for _ in range(5):
        status, body = await attacker.sign_in(email, "wrong password guess")
        assert status == 401, body
    status, body = await attacker.sign_in(email, PASSWORD)  # even the right one, from there
    assert (status, body["code"]) == (429, "signin_locked")
    assert (await browsers().sign_in(email))[0] == 429  # any new browser
    status, body = await known.sign_in(email)
    assert status == 200, body  # the owner's own browser is not held by the lock
    locked_until = await pool.fetchval(
        "SELECT max(locked_until) FROM console_signin_throttle WHERE key LIKE 'account:%'"
    )
    assert locked_until is not None
    assert locked_until - datetime.now(UTC) <= timedelta(minutes=30)  # it ends by itself
    # and a one-time link from the CLI or another owner is never held back
    async with pool.acquire() as conn:
        found = await console_users.find_by_email(conn, email)
        assert found is not None
        from intentd.access.actors import Actor

        token = await team_service.new_link(
            conn,
            Actor.cli(team.client_id),
            found[0],
            now=datetime.now(UTC),
            lifetime=timedelta(hours=1),
        )
    status, body = await browsers().call(
        "POST", "/signin/link", {"token": token, "password": "a brand new passphrase"}
    )
    assert status == 200, body


async def test_the_second_factor_with_replays_refused_and_recovery_codes_once(
    browsers: Callable[[], Browser], team: Team
) -> None:
    email = team.emails[Role.ADMIN]
    browser = await signed_in(browsers, email)
    status, started = await browser.call("POST", "/me/totp/start")
    assert status == 200, started
    assert started["uri"].startswith("otpauth://totp/")
    totp = pyotp.TOTP(started["secret"])
    status, body = await browser.call("POST", "/me/totp/confirm", {"code": "000000"})
    assert status == 422
    status, confirmed = await browser.call("POST", "/me/totp/confirm", {"code": totp.now()})
    assert status == 200, confirmed
    codes = confirmed["recovery_codes"]
    assert len(codes) == 10

    second = browsers()
    status, body = await second.sign_in(email)
    assert (status, body) == (200, {"second_factor": "totp"})
    assert (await second.call("GET", "/session"))[0] == 401  # not signed in yet
    # the code that confirmed the setup was used: the next step's is needed
    import time

    step = int(time.time()) // 30 + 1
    code = totp.at(step * 30)
    status, body = await second.call("POST", "/signin/second-factor", {"code": code})
    assert status == 200, body
    await second.refresh()

    third = browsers()
    await third.sign_in(email)
    status, body = await third.call("POST", "/signin/second-factor", {"code": code})
    assert (status, body["code"]) == (401, "invalid_code")  # a code is used once
    status, body = await third.call("POST", "/signin/second-factor", {"recovery_code": codes[0]})
    assert status == 200, body

    fourth = browsers()
    await fourth.sign_in(email)
    status, body = await fourth.call("POST", "/signin/second-factor", {"recovery_code": codes[0]})
    assert (status, body["code"]) == (401, "invalid_code")


async def test_a_sign_in_link_works_once_and_sets_the_password(
    browsers: Callable[[], Browser], team: Team, pool: Pool
) -> None:
    owner = await signed_in(browsers, team.emails[Role.OWNER])
    email = f"new-{secrets.token_hex(3)}@{team.client_name}.example"
    status, body = await owner.call("POST", "/team", {"email": email, "role": "support"})
    assert status == 201, body
    link = body["signin_link"]
    assert "/console/signin#link=" in link
    token = link.split("#link=")[1]
    newcomer = browsers()
    status, body = await newcomer.call(
        "POST", "/signin/link", {"token": token, "password": "short"}
    )
    assert (status, body["code"]) == (422, "weak_password")  # and the link is still good
    status, body = await newcomer.call(
        "POST", "/signin/link", {"token": token, "password": "my own long passphrase"}
    )
    assert status == 200, body
    assert (await newcomer.refresh())["user"]["email"] == email
    status, body = await browsers().call(
        "POST", "/signin/link", {"token": token, "password": "my own long passphrase"}
    )
    assert (status, body["code"]) == (401, "invalid_link")
    assert (await browsers().sign_in(email, "my own long passphrase"))[0] == 200
