"""The mode: ``test`` or ``live``, one world of keys, webhook endpoints and events.

A ``live`` API key opens main networks; a ``test`` key opens test networks (and main
ones too in a deployment whose ``environment`` is ``test``, :mod:`intentd.credentials`).
An endpoint has the mode of the key that registered it; an event has the mode of its
intent (:func:`mode_of` its source chain's network class), and reaches the endpoints of
its mode only.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["MODES", "Mode", "mode_named", "mode_of"]

Mode = Literal["test", "live"]
MODES: tuple[Mode, ...] = get_args(Mode)


def mode_of(network: str) -> Mode:
    """The mode of an intent whose source chain is of network class ``network``: ``live``
    for ``main``, ``test`` for anything else (never live by mistake)."""
    return "live" if network == "main" else "test"


def mode_named(text: object) -> Mode | None:
    """``text`` as a :data:`Mode` if it names one, else None."""
    return "live" if text == "live" else "test" if text == "test" else None
