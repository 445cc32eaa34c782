"""The retry policy of actions (see ``docs/execution.md``): pure.

An *attempt* ends in failure when its transfer (or gas top-up) is mined and reverts,
or when its nonce is consumed by a transaction that is not ours. After the n-th
failure the action waits ``backoff * 2**(n-1)`` seconds (at most ``backoff_max``) and
is planned again from scratch (new fees, new nonce), until ``max_attempts`` failures;
then it fails for good and the lifecycle is told (``failed``).

Transport errors, a node that forgets a transaction, or a fee market above the cap
are not failures of the action: they are retried without counting.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.backoff import Backoff

__all__ = ["GiveUp", "RetryLater", "RetryPolicy", "after_failure"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 3
    backoff: float = 5.0
    backoff_max: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.backoff < 0 or self.backoff_max < self.backoff:
            raise ValueError(f"invalid retry policy {self}")


@dataclass(frozen=True, slots=True)
class RetryLater:
    attempts: int
    delay: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    attempts: int


def after_failure(failed_before: int, policy: RetryPolicy) -> RetryLater | GiveUp:
    """What follows a failed attempt, given the failures recorded before it."""
    attempts = failed_before + 1
    if attempts >= policy.max_attempts:
        return GiveUp(attempts)
    return RetryLater(attempts, Backoff(policy.backoff, cap=policy.backoff_max).delay(attempts))
