"""What a signed transaction of ours moves, read from its recorded bytes.

Pure: no I/O. ``chain_transactions.raw_tx`` holds the exact EIP-1559 (type 2) bytes
that were broadcast; an ERC-20 transfer's recipient and amount exist only there, in
the call data. :func:`decode` reads the fields the reconciliation needs (``to``,
``value``, ``data``, the gas limit and the fee cap) from the RLP; :func:`transfer_of`
says who received how much of which token. Another transaction type, or bytes that are
not RLP, decode to None, which the reconciliation reports as a mismatch: every
transaction of ours is a type-2 native transfer or ``transfer(address,uint256)`` call.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.domain.actions import NATIVE

__all__ = ["SignedTx", "Transfer", "decode", "transfer_of"]

_TYPE_1559 = 2
_TRANSFER = bytes.fromhex("a9059cbb")
_FIELDS = 12  # chainId, nonce, tip, maxFee, gas, to, value, data, accessList, y, r, s


@dataclass(frozen=True, slots=True)
class SignedTx:
    to: str
    """Lowercase hex."""
    value: int
    data: bytes
    gas_limit: int
    max_fee_per_gas: int


@dataclass(frozen=True, slots=True)
class Transfer:
    """``amount`` base units of ``token`` (or :data:`NATIVE`) to ``recipient``."""

    token: str
    recipient: str
    amount: int


class _Malformed(ValueError):
    pass


def decode(raw: bytes) -> SignedTx | None:
    """``to``, ``value`` and ``data`` of a signed type-2 transaction, or None."""
    if len(raw) < 2 or raw[0] != _TYPE_1559:
        return None
    try:
        fields, end = _item(raw, 1)
    except _Malformed:
        return None
    if end != len(raw) or not isinstance(fields, list) or len(fields) != _FIELDS:
        return None
    parts = [item for item in fields[3:8] if isinstance(item, bytes)]
    if len(parts) != 5:
        return None
    max_fee, gas, to, value, data = parts
    if len(to) != 20:
        return None
    return SignedTx("0x" + to.hex(), _number(value), data, _number(gas), _number(max_fee))


def _number(item: bytes) -> int:
    return int.from_bytes(item, "big")


def transfer_of(tx: SignedTx) -> Transfer:
    """What ``tx`` moves: an ERC-20 ``transfer`` call, else its native value to ``to``."""
    data = tx.data
    if len(data) == 68 and data[:4] == _TRANSFER and data[4:16] == bytes(12) and not tx.value:
        return Transfer(tx.to, "0x" + data[16:36].hex(), int.from_bytes(data[36:68], "big"))
    if data:
        return Transfer(tx.to, "", 0)  # a call we never make: moves nothing we can name
    return Transfer(NATIVE, tx.to, tx.value)


def _item(raw: bytes, pos: int) -> tuple[bytes | list[object], int]:
    """The RLP item at ``pos`` and where the next one starts."""
    if pos >= len(raw):
        raise _Malformed("truncated")
    head = raw[pos]
    if head < 0x80:
        return raw[pos : pos + 1], pos + 1
    if head < 0xB8:
        return _slice(raw, pos + 1, head - 0x80), pos + 1 + head - 0x80
    if head < 0xC0:
        size, start = _long(raw, pos, head - 0xB7)
        return _slice(raw, start, size), start + size
    if head < 0xF8:
        size, start = head - 0xC0, pos + 1
    else:
        size, start = _long(raw, pos, head - 0xF7)
    end = start + size
    if end > len(raw):
        raise _Malformed("truncated list")
    items: list[object] = []
    while start < end:
        item, start = _item(raw, start)
        items.append(item)
    if start != end:
        raise _Malformed("list overruns")
    return items, end


def _long(raw: bytes, pos: int, length_bytes: int) -> tuple[int, int]:
    start = pos + 1 + length_bytes
    if start > len(raw):
        raise _Malformed("truncated length")
    return int.from_bytes(raw[pos + 1 : start], "big"), start


def _slice(raw: bytes, start: int, size: int) -> bytes:
    if start + size > len(raw):
        raise _Malformed("truncated string")
    return raw[start : start + size]
