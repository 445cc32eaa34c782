"""When a console session ends (pure): revoked, past its absolute end, or idle too long.

A session has an absolute end fixed at sign-in (``console.session_absolute_hours``)
and an idle end that moves with use (``console.session_idle_minutes``). Its
``last_seen_at`` is written at most once a :data:`TOUCH_EVERY`, so a busy page does
not write on every request; the idle end is therefore exact to within that time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

__all__ = ["TOUCH_EVERY", "SessionState", "SessionTimes", "session_state", "should_touch"]

TOUCH_EVERY = timedelta(seconds=60)


class SessionState(StrEnum):
    ACTIVE = "active"
    REVOKED = "revoked"
    """Signed out, or ended by a password change or the user's disabling."""
    EXPIRED = "expired"
    """Past its absolute end."""
    IDLE = "idle"
    """Unused for longer than the idle timeout."""


@dataclass(frozen=True, slots=True)
class SessionTimes:
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    revoked_at: datetime | None


def session_state(times: SessionTimes, now: datetime, idle: timedelta) -> SessionState:
    if times.revoked_at is not None:
        return SessionState.REVOKED
    if now >= times.expires_at:
        return SessionState.EXPIRED
    if now - times.last_seen_at >= idle:
        return SessionState.IDLE
    return SessionState.ACTIVE


def should_touch(times: SessionTimes, now: datetime) -> bool:
    return now - times.last_seen_at >= TOUCH_EVERY
