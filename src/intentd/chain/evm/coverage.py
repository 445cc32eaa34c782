"""Proof that ``eth_getLogs`` answers are whole: the logs of *our* blocks, all of them.

Pure. A node that is behind answers ``eth_getLogs`` up to its own head and says nothing
of the rest (older geth does so silently); a node on another fork answers the logs of
its blocks. Neither is visible in the logs themselves when the missing blocks hold no
log, and "no log" is what a deposit missed looks like. So each answer comes with the
answering node's own view of the chain, asked in the same POST (one POST goes to one
node, see ``adapters.evm.json_rpc.JsonRpcClient.together``): the hash of an *anchor* block
at or above the answer's range, asked before and after the logs
(``adapters.evm.log_reads``). The answer is accepted only if every anchor hash is the hash
we read for that height. A node whose block at the anchor is ours has our blocks at
every lower height (each block names its parent), so it answered the logs of our blocks;
asked before the logs, the anchor proves the node already had it (not imported in
between); asked after, that it still had it (no reorg in between).

Every log is checked too: its block inside the range it was asked for, its block hash
the hash read at its height, not ``removed``. A log outside the range, of a block not
read, or of another fork is an inconsistency (:class:`InconsistentAnswer`), never data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer

__all__ = ["LogsAnswer", "UnprovenLogs", "proven_logs"]


@dataclass(frozen=True, slots=True)
class LogsAnswer:
    """One ``eth_getLogs`` answer (or a block's logs from its receipts) and its proof."""

    blocks: BlockRange
    """The range asked for."""
    logs: list[dict[str, Any]]
    anchor: int
    """The block whose hash the answering node gave in the same POST (at or above
    ``blocks.last``)."""
    anchor_hashes: tuple[str, ...]
    """The node's hash of ``anchor``, as it answered before and after the logs."""


class UnprovenLogs(InconsistentAnswer):
    """An answer from a node whose chain at the anchor is not the one read: read again."""


def proven_logs(
    answers: Sequence[LogsAnswer], hashes: Mapping[int, str], *, covering: BlockRange | None = None
) -> list[dict[str, Any]]:
    """The logs of ``answers`` in order, once each answer is proven against ``hashes``
    (the hash of every block read, by height, lower case).

    ``covering``: the answers' ranges must also cover exactly these blocks, in order.
    Raises :class:`UnprovenLogs` for an anchor that is not ours and
    :class:`InconsistentAnswer` for a log that does not belong.
    """
    if covering is not None:
        _check_tiling(answers, covering)
    logs: list[dict[str, Any]] = []
    for answer in answers:
        expected = hashes.get(answer.anchor)
        if answer.anchor < answer.blocks.last or expected is None:
            raise InconsistentAnswer(f"logs of {answer.blocks} anchored at an unread block")
        if not answer.anchor_hashes or any(h.lower() != expected for h in answer.anchor_hashes):
            raise UnprovenLogs(
                f"logs of {answer.blocks} answered by a node whose block {answer.anchor} is"
                f" {'/'.join(answer.anchor_hashes)}, not {expected}"
            )
        for log in answer.logs:
            number = int(log["blockNumber"], 16)
            if number not in range(answer.blocks.first, answer.blocks.last + 1):
                raise InconsistentAnswer(f"log of block {number} in the answer for {answer.blocks}")
            known = hashes.get(number)
            if known is None:
                raise InconsistentAnswer(f"log of block {number}, whose block was not read")
            block_hash = log["blockHash"]
            if (block_hash != known and block_hash.lower() != known) or log.get("removed"):
                raise InconsistentAnswer(f"log of block {number} is from another fork")
        logs.extend(answer.logs)
    return logs


def _check_tiling(answers: Sequence[LogsAnswer], covering: BlockRange) -> None:
    expected = covering.first
    for answer in answers:
        if answer.blocks.first != expected:
            break
        expected = answer.blocks.last + 1
    else:
        if expected == covering.last + 1:
            return
    asked = ", ".join(str(a.blocks) for a in answers)
    raise InconsistentAnswer(f"logs answered for [{asked}] do not cover {covering}")
