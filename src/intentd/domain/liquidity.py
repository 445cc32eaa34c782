"""The relayer's float on one chain and token: pure arithmetic, integers in base units.

The relayer pays every prefill of a destination chain out of its own balance there, and
is repaid later from the intent address on the source chain. What the service may still
promise on one (chain, token) follows from four figures (docs/execution.md, "The
relayer's float"):

- ``balance``: what the relayer holds, read at one block;
- ``reserved``: prefills that will take from it and are not yet final: ``ready`` prefill
  actions (a FUNDED intent's prefill about to start, or waiting for funds, or due for
  another attempt) and ``submitted`` ones (signed, in flight, or mined above the
  confirmation depth: counted even if that block is in ``balance`` already, which can
  only make ``free`` smaller);
- ``owed``: repayments to the relayer not yet confirmed (``relayer_refund`` actions
  landing on this chain and token); never spent before it arrives;
- ``pending``: what PENDING intents will ask of it once they are paid (their
  ``amount_out``); not every intent is paid, so these may add up to more than is free,
  by the over-commit factor.

``free = balance - reserved`` (negative: prefills wait for funds). A new intent may ask
for at most :func:`cover`: what is free, and no more than what keeps every pending intent
within ``free x overcommit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BPS", "Float", "cover", "shortfall"]

BPS = 10_000
"""Basis points in one: an over-commit factor of 1.5 is 15,000."""


@dataclass(frozen=True, slots=True)
class Float:
    """The relayer's figures for one chain and token, in that token's base units."""

    balance: int
    reserved: int = 0
    owed: int = 0
    pending: int = 0

    def __post_init__(self) -> None:
        for name in ("balance", "reserved", "owed", "pending"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} of a float cannot be negative: {self}")

    @property
    def free(self) -> int:
        """What the relayer holds beyond every prefill that will take from it."""
        return self.balance - self.reserved


def cover(figures: Float, overcommit_bps: int) -> int:
    """The largest ``amount_out`` a new intent may ask of this float: at most what is
    free (one intent alone must be payable now), and at most what keeps the pending
    intents' total within ``free x overcommit_bps / 10,000``. Never negative."""
    if overcommit_bps < BPS:
        raise ValueError(f"an over-commit factor below 1 ({overcommit_bps} bps) makes no sense")
    free = figures.free
    if free <= 0:
        return 0
    return max(min(free, free * overcommit_bps // BPS - figures.pending), 0)


def shortfall(
    needs: Mapping[str, int], balances: Mapping[str, int], in_flight: Mapping[str, int]
) -> dict[str, int]:
    """What the relayer lacks, per token, to pay ``needs`` on top of ``in_flight`` (what
    its transfers already signed will take) out of ``balances``; only the tokens it lacks,
    so an empty answer means it can pay. A token without a balance counts as none held:
    a missing reading never lets a prefill through."""
    short: dict[str, int] = {}
    for token, need in needs.items():
        if need < 0 or in_flight.get(token, 0) < 0:
            raise ValueError(f"negative need or commitment of {token}")
        lack = need + in_flight.get(token, 0) - balances.get(token, 0)
        if lack > 0:
            short[token] = lack
    return short
