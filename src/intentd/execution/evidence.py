"""What a verdict on transactions in flight may rest on: pure checks, no I/O.

Providers answer from nodes blocks apart (a failover URL that lags, a load balancer
over several backends, a receipt index that trails the blocks). A verdict therefore
rests on answers that one node gave together, checked against each other:

- :class:`ChainView`: the answering node's head, the signers' transaction counts at one
  block, and receipts, read in one request (``NodeReader.view``). :func:`view_problem`
  says why a view cannot be judged (the node is below the block asked, or shows a
  receipt above its own head); then nothing is decided from it.
- :func:`pack_groups`: open nonce groups in packs that each fit one request, so a
  group is judged from the view that carried its own receipts and count. A group too
  big for one request (many replacements) is read in several, merged by
  :func:`merge_views` on the safe side: the lowest head and counts, any receipt.
- :class:`NonceSearch`: where a signer's count passed a nonce (the block whose
  transaction used it), by counts at block numbers: it only guides the search.
- :func:`prove_use`: the proof itself, from one node's answer: the count before and at
  that block bracket the nonce and the block holds the signer's transaction on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from intentd.execution.tracking import NonceUse, Receipt, Tx

__all__ = [
    "BlockTx",
    "ChainView",
    "NonceSearch",
    "merge_views",
    "pack_groups",
    "prove_use",
    "view_problem",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ChainView:
    """One node's answer to one request: its head, counts at one block, receipts."""

    head: int
    nonces: dict[str, int]
    receipts: dict[str, Receipt | None]


def view_problem(view: ChainView, *, asked: int) -> str | None:
    """Why ``view`` (counts asked at block ``asked``) cannot be judged; None: it can.

    A node below the block asked has no counts for it (whatever it answered); a receipt
    in a block above the node's own head means the answers are not one view."""
    if view.head < asked:
        return f"the node is at block {view.head}, below block {asked} asked"
    above = [r.block_number for r in view.receipts.values() if r and r.block_number > view.head]
    if above:
        return f"receipts in block {max(above)}, above the node's head {view.head}"
    return None


def merge_views(views: Sequence[ChainView]) -> ChainView:
    """Views of one pack read in several requests (maybe from several nodes), as one on
    the safe side: the lowest head (a receipt is final only that deep; a receipt above
    it fails :func:`view_problem`), the lowest count of each signer, every receipt any
    node showed (a receipt is evidence from whichever node; its absence never is)."""
    if not views:
        raise ValueError("no view to merge")
    receipts: dict[str, Receipt | None] = {}
    for view in views:
        for tx_hash, found in view.receipts.items():
            receipts[tx_hash] = receipts.get(tx_hash) or found
    return ChainView(
        head=min(v.head for v in views),
        nonces={s: min(v.nonces[s] for v in views) for s in views[0].nonces},
        receipts=receipts,
    )


def pack_groups(
    items: Sequence[tuple[T, Sequence[Tx]]], size: int
) -> list[list[tuple[T, Sequence[Tx]]]]:
    """``items`` (a key and a nonce group, in order) in consecutive packs whose view (the
    head, one count per signer, one receipt per hash) takes at most ``size`` calls; a
    group too big for any pack gets a pack of its own."""
    packs: list[list[tuple[T, Sequence[Tx]]]] = []
    current: list[tuple[T, Sequence[Tx]]] = []
    signers: set[str] = set()
    calls = 1
    for key, group in items:
        signer = group[0].signer
        more = len(group) + (signer not in signers)
        if current and calls + more > size:
            packs.append(current)
            current, signers, calls = [], set(), 1
            more = len(group) + 1
        current.append((key, group))
        signers.add(signer)
        calls += more
    if current:
        packs.append(current)
    return packs


class NonceSearch:
    """The block in which a signer's transaction count passed ``nonce``, given that the
    count at ``through`` is past it: gallops down from ``through`` (1, 2, 4 ... blocks,
    so a recent use costs a probe or two and the state read stays recent), then bisects.

    Ask :meth:`probe` for the next block to read the count at and give it to
    :meth:`answer` until :meth:`probe` answers None; :attr:`found` is then the block, or
    None (the count was past the nonce down to block 0). Counts that are not monotone
    (a lying node) only misguide it: :func:`prove_use` checks the block it finds.
    """

    def __init__(self, nonce: int, through: int) -> None:
        self._nonce = nonce
        self._hi = through
        """Lowest block known to have a count past the nonce."""
        self._lo: int | None = None
        """Highest block known to have a count at or below the nonce."""
        self._step = 1
        self.probes = 0

    def probe(self) -> int | None:
        if self._lo is not None:
            return None if self._hi - self._lo <= 1 else (self._lo + self._hi) // 2
        if self._hi == 0:
            return None
        return max(self._hi - self._step, 0)

    def answer(self, block: int, count: int) -> None:
        if block != self.probe():
            raise ValueError(f"block {block} was not the probe ({self.probe()})")
        self.probes += 1
        if count > self._nonce:
            self._hi = block
            self._step *= 2
        else:
            self._lo = block

    @property
    def found(self) -> int | None:
        if self._lo is None or self._hi - self._lo != 1:
            return None
        return self._hi


@dataclass(frozen=True, slots=True)
class BlockTx:
    """A transaction of a block as the proof needs it."""

    sender: str
    nonce: int
    tx_hash: str


def prove_use(
    signer: str,
    nonce: int,
    block: int,
    *,
    before: int,
    after: int,
    block_hash: str | None,
    txs: Sequence[BlockTx],
    receipts: Mapping[str, Receipt | None],
) -> NonceUse | None:
    """The transaction that used ``signer``'s ``nonce``, from one node's answer about
    ``block``: its count at ``block - 1`` (``before``) and at ``block`` (``after``), the
    block's hash and transactions, and receipts of our hashes. None unless the answer
    proves it: the counts bracket the nonce and the block holds exactly one transaction
    of the signer with that nonce. Its receipt is kept only if it places it in that block.
    """
    if block_hash is None or not before <= nonce < after:
        return None
    signer = signer.lower()
    found = [tx for tx in txs if tx.sender.lower() == signer and tx.nonce == nonce]
    if len(found) != 1:
        return None
    tx_hash = found[0].tx_hash.lower()
    receipt = receipts.get(tx_hash)
    placed = (
        receipt is not None
        and receipt.block_number == block
        and receipt.block_hash.lower() == block_hash.lower()
    )
    return NonceUse(block, block_hash.lower(), tx_hash, receipt if placed else None)
