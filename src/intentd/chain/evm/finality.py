"""Is a recorded deposit's block still on the chain, and is it final? (pure)

Used for deposits no poller watches (those recorded by trigger-processing): the
verifier compares the block hash recorded with the deposit against the node's block
at that height, until the block is ``final_depth`` blocks below the head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from intentd.chain.evm.decoding import NATIVE, TRANSFER_TOPIC
from intentd.chain.transfers import ChainTransfer
from intentd.domain.deposits import Deposit

__all__ = ["Verdict", "find_again", "judge", "shows_transfer"]


class Verdict(StrEnum):
    CANONICAL = "canonical"
    """The node still has the recorded block; look again later."""
    FINAL = "final"
    """The node still has it, ``final_depth`` or more blocks deep: stop watching."""
    ORPHANED = "orphaned"
    """The node has another block at that height: a reorg removed the recorded one."""
    UNSEEN = "unseen"
    """The node has no block at that height (it lags behind, say a load-balanced backend
    or the next URL after a failover, or a new branch is still shorter): nothing is
    decided on that; look again later."""


def judge(
    recorded_hash: str,
    canonical_hash: str | None,
    *,
    block_number: int,
    latest: int,
    final_depth: int,
) -> Verdict:
    """The verdict on a deposit recorded from block ``block_number`` (``recorded_hash``)
    when the node's block at that height is ``canonical_hash`` and its head ``latest``.

    A block is final once ``latest - block_number >= final_depth``; a reorg deeper than
    that is not looked for (the poller, with the same depth, stops on one).
    """
    if final_depth < 1:
        raise ValueError(f"final_depth must be positive, not {final_depth}")
    if canonical_hash is None:
        return Verdict.UNSEEN
    if canonical_hash.lower() != recorded_hash.lower():
        return Verdict.ORPHANED
    if latest - block_number >= final_depth:
        return Verdict.FINAL
    return Verdict.CANONICAL


def find_again(found: Sequence[ChainTransfer], recorded: Deposit) -> ChainTransfer | None:
    """The deposit among ``found`` (decoded from the block that now holds the
    transaction) that is the same transfer as the one recorded: same transaction and
    identity (``transfer_index``; for a record made before identities existed, the
    block-wide ``log_index``), token, recipient and amount. None if the transaction,
    executed again in the new block, no longer makes that transfer."""
    for deposit in found:
        if (
            deposit.tx_hash == recorded.tx_hash
            and (
                deposit.transfer_index == recorded.transfer_index
                if recorded.transfer_index is not None
                else deposit.log_index == recorded.log_index
            )
            and deposit.token == recorded.token
            and deposit.to_address == recorded.to_address
            and deposit.amount == recorded.amount
        ):
            return deposit
    return None


def shows_transfer(receipt: Mapping[str, Any], recorded: Deposit) -> bool:
    """Whether ``receipt`` (a token transfer's transaction, mined again) still makes the
    recorded transfer: the ``transfer_index``-th ``Transfer`` log of its token (for a
    record made before identities existed, any one of them) pays its recipient its
    amount. Always False for the native coin, which no log shows."""
    if recorded.token == NATIVE:
        return False
    paid = []
    for log in receipt.get("logs") or []:
        topics = log.get("topics") or []
        if str(log.get("address", "")).lower() != recorded.token or len(topics) < 3:
            continue
        if str(topics[0]).lower() != TRANSFER_TOPIC:
            continue
        data = str(log.get("data") or "0x")
        paid.append(("0x" + str(topics[2])[-40:].lower(), int(data, 16) if data != "0x" else 0))
    wanted = (recorded.to_address, recorded.amount)
    if recorded.transfer_index is None:
        return wanted in paid
    return 0 <= recorded.transfer_index < len(paid) and paid[recorded.transfer_index] == wanted
