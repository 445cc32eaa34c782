"""The set of watched intent addresses, and which intent rows a refresh must read.

Every chain's poller watches every intent address, whatever the intent's source
chain (a payment on the wrong chain is still found, and later refunded).

Memory: an address is kept as its 20 raw bytes in a ``set`` (about 90 bytes per
address with the set's table), so a million addresses take about 100 MB.

Refreshing by ``id > last seen id`` alone could miss an intent: ids are drawn from a
sequence when a row is inserted, but rows become visible when their transaction
commits, and a later id can commit first. :class:`IntentIdTracker` therefore
remembers the ids skipped below the highest one seen ("gaps": either rolled back or
still in flight) and asks for them again on each refresh until they are
``gap_ttl`` seconds old. An intent insert that takes longer than that to commit
would be missed; the API commits an intent in one short transaction.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["IntentIdTracker", "WatchedAddresses"]


class WatchedAddresses:
    """A set of EVM addresses, looked up by any hex text that ends with the 40 hex digits.

    Both ``0x``-prefixed addresses (any case) and 32-byte log topics (an address
    left-padded with zeros) can be passed as they come from the node.
    """

    __slots__ = ("_addresses",)

    def __init__(self, addresses: Iterable[str] = ()) -> None:
        self._addresses: set[bytes] = set()
        for address in addresses:
            self.add(address)

    def add(self, address: str) -> None:
        """Watch ``address`` (``0x`` and 40 hex digits, any case)."""
        if len(address) != 42 or not address.startswith("0x"):
            raise ValueError(f"not an address: {address!r}")
        self._addresses.add(bytes.fromhex(address[2:]))

    def contains_hex(self, text: str) -> bool:
        """Whether the address in the last 40 hex digits of ``text`` is watched."""
        return bytes.fromhex(text[-40:]) in self._addresses

    def __len__(self) -> int:
        return len(self._addresses)


class IntentIdTracker:
    """Which intent ids the next refresh must ask for: all above ``last_id``, plus gaps.

    Call :meth:`saw` with the ids each query returned, and :meth:`gaps` for the
    skipped ids still worth asking for. At most ``max_gaps`` gaps are kept (the
    highest ids: an id far below the newest is not in flight any more).
    """

    def __init__(self, *, gap_ttl: float = 600.0, max_gaps: int = 1000) -> None:
        if gap_ttl <= 0 or max_gaps < 0:
            raise ValueError("gap_ttl must be positive and max_gaps not negative")
        self.last_id = 0
        self._gap_ttl = gap_ttl
        self._max_gaps = max_gaps
        self._gaps: dict[int, float] = {}  # id -> when it was first found missing

    def saw(self, ids: Iterable[int], now: float) -> None:
        """Record the ids a query returned, at monotonic time ``now``."""
        for found in sorted(ids):
            if found > self.last_id:
                skipped_from = max(self.last_id + 1, found - self._max_gaps)
                for missing in range(skipped_from, found):
                    self._gaps[missing] = now
                self.last_id = found
            else:
                self._gaps.pop(found, None)
        if len(self._gaps) > self._max_gaps:
            for old in sorted(self._gaps)[: len(self._gaps) - self._max_gaps]:
                del self._gaps[old]

    def gaps(self, now: float) -> list[int]:
        """Skipped ids younger than ``gap_ttl`` at ``now``, in order; older ones are dropped."""
        expired = [gap for gap, since in self._gaps.items() if now - since >= self._gap_ttl]
        for gap in expired:
            del self._gaps[gap]
        return sorted(self._gaps)
