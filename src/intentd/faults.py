"""Crash points for crash-safety tests.

``INTENTD_CRASH_AT=<name>[,<name>...]`` in a process's environment makes
:func:`crash_point` with that name kill the process at once (``os._exit``), the way
a power cut or ``kill -9`` would: no cleanup, no flush, no offset commit. Unset in
production, where the check is a frozenset lookup.
"""

from __future__ import annotations

import os
from functools import cache

CRASH_EXIT_CODE = 86


@cache
def _armed() -> frozenset[str]:
    return frozenset(filter(None, os.environ.get("INTENTD_CRASH_AT", "").split(",")))


def crash_point(name: str) -> None:
    """Die here if the environment armed ``name``."""
    if name in _armed():
        os.write(2, f'{{"event": "crash point reached", "point": "{name}"}}\n'.encode())
        os._exit(CRASH_EXIT_CODE)
