"""Why an action waits, as a stable code written with its text (pure).

The executor postpones an action that cannot go out now (the relayer short, fees above
the cap, a node behind our payments, ...) with ``last_error`` = ``<code>: <text>``
(:func:`wait_error`); the console's "why it is waiting" (``console.waiting``) matches
the code exactly (:func:`wait_code`) and shows the text (:func:`wait_text`). A
``last_error`` without a known code (a failed attempt's free text: a revert, a nonce
used by another transaction) is never read for words.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["WaitCode", "wait_code", "wait_error", "wait_text"]


class WaitCode(StrEnum):
    SECOND_PROVIDER = "second_provider"
    """A prefill waits for the second provider to confirm its intent's deposits."""
    LIQUIDITY_SHORT = "liquidity_short"
    """A prefill waits for a refill: the relayer lacks its amount (or its gas)."""
    NODE_LAGS = "node_lags"
    """The relayer's balance came from a node behind our own payments."""
    FEE_CAP = "fee_cap"
    """The fee market is above the chain's ``max_fee_per_gas``."""
    BELOW_GAS = "below_gas"
    """A native amount does not cover its own gas at today's fees."""
    L1_FEE_UNKNOWN = "l1_fee_unknown"
    """The OP-stack chain's oracle gives no L1 data fee bound."""


_BY_VALUE = {code.value: code for code in WaitCode}


def wait_error(code: WaitCode, text: str) -> str:
    """The ``last_error`` of an action that waits for ``code``: ``<code>: <text>``."""
    return f"{code.value}: {text}"


def _split(error: str) -> tuple[WaitCode | None, str]:
    head, colon, rest = error.partition(":")
    code = _BY_VALUE.get(head) if colon else None
    return (code, rest.removeprefix(" ")) if code is not None else (None, error)


def wait_code(error: str | None) -> WaitCode | None:
    """The code of a ``last_error`` written by :func:`wait_error`; None for any other."""
    return None if not error else _split(error)[0]


def wait_text(error: str) -> str:
    """The text of a ``last_error`` as shown: without its code, if it has one."""
    return _split(error)[1]
