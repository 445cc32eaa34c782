"""Which native-coin intents the poller reconciles, in which blocks (pure).

The balance reconciliation (``chain.evm.reconciliation``) costs one ``eth_getBalance`` a
batch for every address it covers, so what it covers is decided here, from what the
intents table says of each native-coin intent of the chain (:class:`NativeIntent`).

:func:`funding_window` is an intent's window: the blocks, by their time, in which a
reconciled deposit to it is looked for (:class:`~intentd.chain.evm.balances.Reconciled`).
It covers the blocks in which a payment could still fund the intent, decided in
*block time*, never by the intent's status now (docs/indexer.md, *Which intents are
reconciled*):

- from :data:`~intentd.chain.evm.balances.BEFORE_CREATION` before its creation;
- while it is live (no ``terminal_at``): to
  :data:`~intentd.chain.evm.balances.AFTER_EXPIRY` after its expiry, as before: an
  intent that is FUNDED or REFUNDING may still receive an excess, which is refunded;
- once it ended: to :data:`AFTER_END` after ``terminal_at`` (if that is earlier). A
  block stamped before the intent ended is covered whenever the poller reads it, so
  a payment a lagging poller reads after the intent expired is still found, as a late
  deposit that is refunded. Past that, ETH sent to the address through a contract is
  not looked for (a top-level payment is: the watched set keeps the address for its
  whole watch window); an ended intent can no longer be funded, and an attacker's
  intents stop costing reads once they expired.

:class:`OpenNativeWindows` keeps the windows of a chain's native-coin intents in
memory, as the poller learns of them, and answers which meet a batch. A window only
ever narrows (a status that ends an intent has no way out, so a row read earlier
never undoes a later one); windows that ended a day before the newest block asked
about are forgotten (a rewind never goes back that far).
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.chain.evm.balances import Reconciled

__all__ = ["AFTER_END", "KEEP", "NativeIntent", "OpenNativeWindows", "funding_window"]

AFTER_END = 300
"""Seconds after an intent ended (``terminal_at``, the database's clock) its address is
still reconciled: the skew between that clock and the chain's block times (as
``BEFORE_CREATION``), and a reorg that mines a payment of the intent's last minutes
again, a few blocks later."""
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
    window = Reconciled.of_intent(intent.address, intent.created_at, intent.expires_at)
    if intent.terminal_at is None:
        return window
    last_time = min(window.last_time, max(intent.terminal_at, intent.created_at) + AFTER_END)
    return Reconciled(window.address, window.first_time, last_time)


class OpenNativeWindows:
    """The windows of a chain's native-coin intents, by address."""

    def __init__(self) -> None:
        self._windows: dict[str, Reconciled] = {}

    def remember(self, intent: NativeIntent) -> None:
        """Add the intent's window, or narrow it to what the row says now."""
        window = funding_window(intent)
        known = self._windows.get(window.address)
        if known is None or window.last_time < known.last_time:
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
