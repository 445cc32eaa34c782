"""The counters a console sign-in is held by (the rules: :mod:`intentd.access.throttle`).

A sign-in is held by its source address's counter and by its account's (keyed by the
email typed, so an unknown email behaves as a known one), or, from a browser the
account signed in from before, by that device's; a one-time link by its source's
link counter. :meth:`Gate.admit` counts the attempt as a failure before anything is
checked, under a lock of the counters' rows (``adapters.postgres.console_sessions.
hold_counters``), and answers 429 while one is locked; :meth:`Gate.succeed` gives it
back. So attempts arriving together are counted one after the other, and however many
arrive at once, no more than a limit's worth is ever checked.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from intentd.access.throttle import Counter, after_failure, given_back, remaining_lock
from intentd.access.tokens import token_hash
from intentd.adapters.postgres import Connection, console_sessions
from intentd.adapters.postgres.console_users import User
from intentd.api.problems import ApiProblem
from intentd.console.state import ConsoleState

__all__ = ["Gate", "gate_for"]


def _locked(left: timedelta, code: str) -> ApiProblem:
    seconds = max(1, int(left.total_seconds() + 0.999))
    return ApiProblem(
        429,
        code,
        f"too many failed sign-ins; try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


def _account_key(email: str) -> str:
    return "account:" + hashlib.sha256(email.strip().lower().encode()).hexdigest()


class Gate:
    """The counters a sign-in is held by: its source's, and its account's or device's
    (or a link's). An attempt is admitted, and counted as a failure, before anything is
    checked (:meth:`admit`); a success gives it back (:meth:`succeed`). The counters'
    rows are locked while they are read and written, so attempts arriving together are
    counted one after the other: no more than a limit's worth is ever checked."""

    def __init__(self, state: ConsoleState, source: str | None, gate: str, gate_limit: int) -> None:
        self.state = state
        self.source_key = f"source:{source or 'unknown'}"
        self.gate = gate
        self.gate_limit = gate_limit
        self.admitted: dict[str, Counter] = {}
        """Each counter as this attempt's admission left it."""

    def _limits(self) -> tuple[tuple[str, int, str], ...]:
        policy = self.state.throttle
        return (
            (self.source_key, policy.source_limit, "signin_rate_limited"),
            (self.gate, self.gate_limit, "signin_locked"),
        )

    async def admit(self, conn: Connection, now: datetime) -> None:
        """Count this attempt (in a transaction of its own); 429 while a counter is
        locked, and then nothing is counted."""
        policy = self.state.throttle
        async with conn.transaction():
            held = await console_sessions.hold_counters(conn, [self.source_key, self.gate], now)
            for key, _, code in self._limits():
                left = remaining_lock(held[key], now)
                if left is not None:
                    raise _locked(left, code)
            admitted = {
                key: after_failure(held[key], now, limit, policy)
                for key, limit, _ in self._limits()
            }
            for key, counted in admitted.items():
                await console_sessions.save_counter(conn, key, counted)
        self.admitted = admitted

    async def succeed(self, conn: Connection, now: datetime, *, clear_gate: bool = True) -> None:
        """The admitted attempt succeeded (in the caller's transaction): the source's
        count given back, and the gate's cleared (or, ``clear_gate`` false, given back)."""
        assert self.admitted, "succeed() before admit()"
        held = await console_sessions.hold_counters(conn, [self.source_key, self.gate], now)
        for key, limit, _ in self._limits():
            if key == self.gate and clear_gate:
                await console_sessions.clear_counter(conn, key)
            else:
                await console_sessions.save_counter(
                    conn, key, given_back(held[key], self.admitted[key], limit)
                )


async def gate_for(
    conn: Connection,
    state: ConsoleState,
    *,
    source: str | None,
    device: str | None,
    email: str,
    user: User | None,
    now: datetime,
) -> tuple[Gate, bool]:
    """The gate of a sign-in to ``email`` from ``source`` with the device cookie
    ``device``, and whether it comes from one of the user's devices."""
    if device and user is not None:
        device_hash = token_hash(device)
        if await console_sessions.device_user(conn, device_hash, now) == user.id:
            gate = Gate(state, source, f"device:{device_hash}", state.throttle.device_limit)
            return gate, True
    return Gate(state, source, _account_key(email), state.throttle.account_limit), False
