"""Which native-coin intents the poller reconciles, in which blocks (pure).

The balance reconciliation (``indexer.reconciliation``) costs one ``eth_getBalance`` a
batch for every address it covers, so what it covers is decided here, from what the
intents table says of each native-coin intent of the chain (:class:`NativeIntent`).

:func:`funding_window` is an intent's window: the blocks, by their time, in which a
reconciled deposit to it is looked for (:class:`~intentd.indexer.balances.Reconciled`).
:class:`OpenNativeWindows` keeps the windows of a chain's native-coin intents in
memory, as the poller learns of them, and answers which meet a batch; windows that
ended a day before the newest block asked about are forgotten (a rewind never goes
back that far).
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.indexer.balances import Reconciled

__all__ = ["AFTER_END", "KEEP", "NativeIntent", "OpenNativeWindows", "funding_window"]

AFTER_END = 300
"""Seconds after an intent ended (``terminal_at``) its address is still reconciled."""
KEEP = 86_400
"""Seconds a window is kept after it ended (measured in block time)."""


@dataclass(frozen=True, slots=True)
class NativeIntent:
    """A native-coin intent of the chain, as the intents table says; Unix times."""

    address: str
    created_at: int
    expires_at: int
    terminal_at: int | None = None
    """When it reached a terminal status (``intents.terminal_at``), None while live."""


def funding_window(intent: NativeIntent) -> Reconciled:
    """The block times in which the intent's address is reconciled."""
    return Reconciled.of_intent(intent.address, intent.created_at, intent.expires_at)


class OpenNativeWindows:
    """The windows of a chain's native-coin intents, by address."""

    def __init__(self) -> None:
        self._windows: dict[str, Reconciled] = {}

    def remember(self, intent: NativeIntent) -> None:
        """Add the intent's window, or update it with what the row says now."""
        window = funding_window(intent)
        self._windows[window.address] = window

    def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        """The windows that meet ``first_time..last_time``; forgets those that ended
        :data:`KEEP` seconds before ``last_time``."""
        self._windows = {
            address: window
            for address, window in self._windows.items()
            if window.last_time >= last_time - KEEP
        }
        return [
            window
            for window in self._windows.values()
            if window.first_time <= last_time and first_time <= window.last_time
        ]

    def __len__(self) -> int:
        return len(self._windows)
