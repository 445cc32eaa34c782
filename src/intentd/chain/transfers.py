"""A transfer to a watched address as decoded from a chain (pure), whatever the family."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ChainTransfer", "chain_order"]


class ChainTransfer(NamedTuple):
    """A transfer to a watched address as decoded from the chain, before the lifecycle
    decides anything about it (it becomes a ``domain.deposits.Deposit`` on the wire or
    in ``intentd.wire``); both indexes are -1 for the native coin.

    A named tuple rather than a dataclass: a backfill makes tens of thousands a second.
    """

    block_number: int
    block_hash: str
    block_time: int
    tx_hash: str
    tx_index: int
    log_index: int
    """The log's index in its block (-1 native): where it was seen, not who it is."""
    token: str
    from_address: str
    to_address: str
    amount: int
    transfer_index: int
    """Position among the token contract's ``Transfer`` logs of the transaction (-1 native)."""

    @property
    def key(self) -> tuple[str, str, int]:
        """(tx_hash, token, transfer_index): what identifies the transfer on any fork."""
        return self.tx_hash, self.token, self.transfer_index


def chain_order(deposit: ChainTransfer) -> tuple[int, int, int]:
    """Sort key: block, transaction, log (a native transfer before its transaction's logs)."""
    return deposit.block_number, deposit.tx_index, deposit.log_index
