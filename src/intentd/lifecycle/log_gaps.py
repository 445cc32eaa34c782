"""A consumer position the partition's log no longer holds, and what it skipped (pure).

Retention (``retention.ms``/``retention.bytes``) and DeleteRecords move a partition's
log start forward whatever the consumer groups have read. A group whose committed
position is below the log start has skipped ``log_start - position`` records it never
applied; one whose position is past the log end reads a log that was truncated or
recreated; one with no committed position at all may be new, or may have lost its
offsets (:attr:`LogGap.uncommitted`). :func:`gap_of` names the first two cases; the
caller alerts and recovers what was skipped from the source of truth before it reads
on (``scanning.gap_recovery``), never resetting quietly.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LogGap", "gap_of", "rescan_from"]


@dataclass(frozen=True, slots=True)
class LogGap:
    """A partition whose log does not hold the group's position."""

    topic: str
    partition: int
    position: int
    """The next offset the group was to read (its committed offset)."""
    log_start: int
    """The partition's first offset still held (its low watermark)."""
    log_end: int
    """The offset the next record will get (its high watermark)."""
    uncommitted: bool = False
    """The group has no committed position (``position`` is then 0): a new group, which
    skipped nothing, or one whose offsets expired (``offsets.retention.minutes``) or
    whose name changed, which skipped what retention deleted; the recovery tells them
    apart by the partition's recorded applied block."""

    @property
    def skipped(self) -> int:
        """Records deleted before they were read (0 for a position past the log end,
        where how many were lost cannot be known)."""
        return max(self.log_start - self.position, 0)

    @property
    def past_end(self) -> bool:
        return self.position > self.log_end


def gap_of(
    topic: str, partition: int, *, position: int, log_start: int, log_end: int
) -> LogGap | None:
    """The gap of ``position`` in a log holding ``log_start .. log_end``; None if the log
    holds it (the broker's out-of-range answer was stale: read again from it)."""
    if log_start <= position <= log_end:
        return None
    return LogGap(topic, partition, position, log_start, log_end)


def rescan_from(last_applied_block: int, *, reorg_window: int) -> int:
    """The first block a rescan must read to find every deposit a gap skipped, given
    the block of the last chain message the partition applied.

    A deposits partition is in block order, except that after a reorg the poller
    publishes again from the common ancestor, at most ``reorg_window`` blocks back; so
    the skipped records are in blocks from ``last_applied_block - reorg_window`` on.
    """
    return max(last_applied_block - reorg_window, 0)
