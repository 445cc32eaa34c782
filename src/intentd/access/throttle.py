"""Sign-in throttling: how many failures lock what, and for how long (pure).

Three counters, each in a window of :attr:`ThrottlePolicy.window`:

- per **source** address: ``source_limit`` failures lock the address (every account);
- per **account** (by the email typed, so an unknown email behaves as a known one):
  ``account_limit`` failures lock sign-ins to it, but only those that do not come
  from one of the account's devices (a browser it signed in from before, which holds
  a device cookie);
- per **device**: ``device_limit`` failures lock that device alone.

A lock lasts ``base_lock`` doubled for each failure past the limit, at most
``max_lock``, and ends by itself: nobody is locked out for good. Failures from an
attacker, who holds none of the owner's devices, lock only sign-ins without one, so
the owner keeps signing in from a known browser, and can always get a one-time link
(``intentd users link``), which no password lock holds back. A success clears the
account's (or the device's) counter; a source's counter only ages out, so an attacker
cannot reset it with an account of its own.

**An attempt counts before it is checked.** The caller admits an attempt by
:func:`after_failure` (as if it failed) under a lock of the counter's row, before the
password or the code is checked, and gives it back (:func:`given_back`) if it
succeeds. So attempts checked at once are counted at once: however many arrive
together, at most ``limit`` of them are checked before the lock, never ``limit`` plus
whatever was in flight while the first failures were being written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Counter", "ThrottlePolicy", "after_failure", "given_back", "remaining_lock"]


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    window: timedelta = timedelta(minutes=15)
    source_limit: int = 30
    account_limit: int = 5
    device_limit: int = 10
    base_lock: timedelta = timedelta(minutes=1)
    max_lock: timedelta = timedelta(minutes=30)


@dataclass(frozen=True, slots=True)
class Counter:
    failures: int
    window_start: datetime
    locked_until: datetime | None = None


def remaining_lock(counter: Counter | None, now: datetime) -> timedelta | None:
    """How long ``counter``'s lock still lasts (None: not locked)."""
    if counter is None or counter.locked_until is None or counter.locked_until <= now:
        return None
    return counter.locked_until - now


def after_failure(
    counter: Counter | None, now: datetime, limit: int, policy: ThrottlePolicy
) -> Counter:
    """The counter after one more failure at ``now``, locked once it reaches ``limit``."""
    if counter is None or now - counter.window_start >= policy.window:
        failures, start = 1, now
    else:
        failures, start = counter.failures + 1, counter.window_start
    locked_until = counter.locked_until if counter is not None else None
    if failures >= limit:
        doublings = min(failures - limit, 20)
        lock = min(policy.base_lock * (2**doublings), policy.max_lock)
        locked_until = max(locked_until or now, now + lock)
    return Counter(failures, start, locked_until)


def given_back(counter: Counter, admitted: Counter, limit: int) -> Counter:
    """The counter after an attempt succeeded that was admitted (counted as a failure)
    when it became ``admitted``: one failure fewer, and no lock once below ``limit``.

    Only an unlocked counter admits attempts, so a lock on a counter that is below its
    limit without this attempt was set by counting this attempt: it goes with it. If the
    window has restarted since (another ``window_start``), the attempt is no longer
    counted: nothing is given back."""
    if counter.window_start != admitted.window_start or counter.failures == 0:
        return counter
    failures = counter.failures - 1
    locked_until = counter.locked_until if failures >= limit else None
    return Counter(failures, counter.window_start, locked_until)
