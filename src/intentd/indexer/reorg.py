"""Reorg checks: does a batch extend what was processed, where did the chains fork.

Pure. The poller keeps its cursor (last processed block) and the recent processed
blocks; before a batch is applied, :func:`check_linkage` says whether it extends the
cursor. If not, the poller reads the node's current hashes at the stored heights and
:func:`common_ancestor` names the block to rewind to. Deposits published from the
orphaned blocks and absent from the new canonical blocks are retracted
(:func:`retractions`).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from intentd.chain.blocks import BlockHeader
from intentd.chain.transfers import ChainTransfer

__all__ = [
    "Cursor",
    "DeepReorgError",
    "Linkage",
    "PublishedDeposit",
    "check_linkage",
    "common_ancestor",
    "retractions",
]


@dataclass(frozen=True, slots=True)
class Cursor:
    """The last processed block. ``hash`` is None only before the first block."""

    number: int
    hash: str | None


class Linkage(enum.Enum):
    LINKED = "linked"
    """Each block's parent is the block before it, the first one's the cursor: apply."""
    FORKED = "forked"
    """The first block does not extend the cursor: the chain reorganised below it."""
    TORN = "torn"
    """The batch itself is not one chain (a reorg while it was read): read it again."""


class DeepReorgError(Exception):
    """The chain forked below every block the poller remembers; it must not guess."""


class PublishedDeposit(NamedTuple):
    """A deposit the poller published, as remembered to retract it after a reorg."""

    block_number: int
    block_hash: str
    tx_hash: str
    log_index: int
    """Where it was published: the log's index in ``block_hash`` (-1 native)."""
    intent_address: str
    token: str | None = None
    transfer_index: int | None = None
    """With ``tx_hash`` and ``token``, its identity; None if published before identities."""
    amount: int | None = None
    """What was published (None if remembered before amounts were)."""

    @property
    def key(self) -> tuple[str, str | None, int | None]:
        """The deposit's identity (``decoding.ChainTransfer.key``)."""
        return self.tx_hash, self.token, self.transfer_index

    def made_again_by(self, deposit: ChainTransfer) -> bool:
        """``deposit`` (from the new branch) is this transfer again: same identity, same
        recipient and, where known, same amount. A transaction re-mined elsewhere can
        make another transfer at the same position; that one is a new deposit."""
        return (
            deposit.key == self.key
            and deposit.to_address == self.intent_address
            and (self.amount is None or deposit.amount == self.amount)
        )


def check_linkage(cursor: Cursor, headers: Sequence[BlockHeader]) -> Linkage:
    """Whether ``headers`` (consecutive heights after the cursor) extend the cursor."""
    if not headers:
        return Linkage.LINKED
    if headers[0].number != cursor.number + 1:
        raise ValueError(f"batch starts at {headers[0].number}, cursor is {cursor.number}")
    if cursor.hash is not None and headers[0].parent_hash != cursor.hash:
        return Linkage.FORKED
    for parent, child in itertools.pairwise(headers):
        if child.parent_hash != parent.hash:
            return Linkage.TORN
    return Linkage.LINKED


def common_ancestor(stored: Mapping[int, str], canonical: Mapping[int, str | None]) -> Cursor:
    """The highest remembered block the node still has at its height.

    ``stored`` maps the remembered heights to their hashes; ``canonical`` maps the
    same heights to the node's current hash (None where the node has no block yet).
    Raises :class:`DeepReorgError` when no remembered block is canonical.
    """
    for number in sorted(stored, reverse=True):
        if canonical.get(number) == stored[number]:
            return Cursor(number, stored[number])
    heights = f"{min(stored)}..{max(stored)}" if stored else "none"
    raise DeepReorgError(
        f"no remembered block is on the node's chain (remembered heights: {heights}); "
        "the reorg is deeper than the window, or the node follows another chain"
    )


def retractions(
    orphans: Iterable[PublishedDeposit], replacements: Iterable[ChainTransfer]
) -> list[PublishedDeposit]:
    """Orphaned published deposits that the new canonical blocks do not contain again.

    A transfer re-mined in a new block keeps its identity (transaction hash, token and
    position in the transaction), so it is republished, not retracted, as long as it
    pays the same recipient the same amount (:meth:`PublishedDeposit.made_again_by`).
    """
    present: dict[tuple[str, str | None, int | None], list[ChainTransfer]] = {}
    for deposit in replacements:
        present.setdefault(deposit.key, []).append(deposit)
    seen: set[tuple[str, str | None, int | None]] = set()
    gone = []
    for orphan in sorted(orphans, key=lambda o: (o.block_number, o.tx_hash, o.log_index)):
        again = any(orphan.made_again_by(d) for d in present.get(orphan.key, ()))
        if not again and orphan.key not in seen:
            seen.add(orphan.key)
            gone.append(orphan)
    return gone
