"""A bounded mapping that forgets the least recently used entry first (pure).

What a flood can fill (cached keys, rate-limit buckets) is held here, so memory stays
bounded and a full map drops one old entry at a time instead of everything at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Lru"]

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class Lru(Generic[_K, _V]):
    """At most ``size`` entries; ``get`` and ``put`` make an entry the most recent."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._size = size
        self._entries: OrderedDict[_K, _V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: _K) -> _V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: _K, value: _V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def pop(self, key: _K) -> None:
        self._entries.pop(key, None)
