"""A set of EVM addresses, looked up by the hex text a node answers (pure).

Memory: an address is kept as its 20 raw bytes in a ``set`` (about 90 bytes per
address with the set's table), so a million addresses take about 100 MB.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["WatchedAddresses"]


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
        self._addresses.add(_raw(address))

    def discard(self, address: str) -> None:
        """Stop watching ``address`` (no error if it was not watched)."""
        self._addresses.discard(_raw(address))

    def contains_hex(self, text: str) -> bool:
        """Whether the address in the last 40 hex digits of ``text`` is watched."""
        return bytes.fromhex(text[-40:]) in self._addresses

    def __len__(self) -> int:
        return len(self._addresses)


def _raw(address: str) -> bytes:
    if len(address) != 42 or not address.startswith("0x"):
        raise ValueError(f"not an address: {address!r}")
    return bytes.fromhex(address[2:])
