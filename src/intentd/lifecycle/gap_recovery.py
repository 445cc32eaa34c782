"""Recover what a gap in a consumed log skipped, from the source of truth.

A gap (:mod:`intentd.lifecycle.log_gaps`) is recovered before the consumer reads on,
and :meth:`LogGapRecovery.recover` returns only once the recovery is durable; if it
raises, the group's position stays where it was and the gap is found, and recovered,
again at the next read (a crash halfway does the same: every step is idempotent).

- ``<prefix>.deposits.<CHAIN>``: the deposits are re-derived from the chain. The
  blocks from :func:`~intentd.lifecycle.log_gaps.rescan_from` (the block of the last
  chain message the partition applied, less the reorg window) to the poller's cursor
  (nothing above it was published) are read with the poller's own decoding
  (``indexer.range_deposits.scan_range``) for every intent address, and each deposit
  found is credited (``lifecycle.crediting.credit``: once per identity, so the ones
  already credited change nothing). A retraction in the gap is re-derived by handing
  every deposit recorded in those blocks to the trigger verifier
  (``lifecycle.trigger_verifier``, ``UnitOfWork.watch``), which retracts or relocates
  one whose block a reorg orphaned and lets go of the others once final. Not
  re-derived: native coin that reached an address only through a contract (the
  poller's balance reconciliation). A partition with no block recorded cannot be
  bounded: :class:`UnboundedGap` is raised until an operator records the block to
  rescan from (docs/runbook.md).
- ``<prefix>.action-results``: the results are outbox rows (written with the
  action's status change); the ones still kept (published within the relay's
  ``keep_days``) are published again, and applying a result is idempotent.
- any other topic: nothing to re-derive from here; logged at error.
"""

from __future__ import annotations

from datetime import UTC, datetime

import structlog

from intentd import observability as metrics
from intentd import wire
from intentd.indexer.planning import BlockRange
from intentd.indexer.range_deposits import scan_range
from intentd.indexer.watched import WatchedAddresses
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import SEEN_BEFORE, credit
from intentd.lifecycle.log_gaps import LogGap, rescan_from
from intentd.lifecycle.ports import LogPositions, Store, VerifierChains
from intentd.messages import action_results_topic, deposits_topic
from intentd.settings import Settings

__all__ = ["LogGapRecovery", "UnboundedGap"]

log = structlog.get_logger()


class UnboundedGap(Exception):
    """A deposits partition lost records, but no applied block bounds the rescan."""


class LogGapRecovery:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        positions: LogPositions,
        chains: VerifierChains,
        *,
        reorg_window: int,
    ) -> None:
        self._settings = settings
        self._book = ChainBook.of_settings(settings)
        self._store = store
        self._positions = positions
        self._chains = chains
        self._window = reorg_window
        prefix = settings.kafka.topic_prefix
        self._chain_of = {deposits_topic(prefix, chain): chain for chain in settings.chains}
        self._results = action_results_topic(prefix)

    async def recover(self, gap: LogGap) -> None:
        """Recover what ``gap`` skipped, durably; raises if it cannot (yet)."""
        try:
            chain = self._chain_of.get(gap.topic)
            if chain is not None:
                await self._rescan(chain, gap)
                outcome = "rescanned"
            elif gap.topic == self._results:
                replayed = await self._positions.replay_outbox(gap.topic)
                log.warning("action results published again from the outbox", rows=replayed)
                outcome = "replayed"
            else:
                log.error("nothing to recover a gap of this topic from", topic=gap.topic)
                outcome = "unrecoverable"
        except Exception:
            metrics.LOG_GAP_RECOVERIES.labels(gap.topic, "failed").inc()
            raise
        metrics.LOG_GAP_RECOVERIES.labels(gap.topic, outcome).inc()

    async def _rescan(self, chain: str, gap: LogGap) -> None:
        last = await self._positions.applied_block(gap.topic, gap.partition)
        if last is None:
            raise UnboundedGap(
                f"{gap.topic}:{gap.partition}: records {gap.position}..{gap.log_start - 1}"
                " were deleted unread and no applied block bounds a rescan; record one"
                " in log_positions (docs/runbook.md, IntentdKafkaPositionOutsideLog)"
            )
        cursor = await self._positions.poller_cursor(chain)
        first = rescan_from(last, reorg_window=self._window)
        if cursor is None or cursor < first:
            log.warning("nothing published past the applied block; nothing to rescan")
            return
        config = self._settings.chains[chain]
        reader = self._chains.reader(config)
        tokens = frozenset(t.address.lower() for t in config.tokens)
        watched = WatchedAddresses(await self._positions.intent_addresses())
        found = credited = 0
        for blocks in BlockRange(first, cursor).chunks(config.batch_size):
            raw = await reader.read_range(blocks)
            _, transfers = await scan_range(
                chain, reader, raw, blocks, tokens=tokens, watched=watched
            )
            for transfer in transfers:
                deposit = wire.found_deposit(chain, transfer)
                async with self._store.unit() as uow:
                    outcome = await credit(uow, self._book, deposit, now=datetime.now(UTC))
                found += 1
                credited += outcome not in SEEN_BEFORE
        recorded = await self._positions.recorded_deposits(chain, first, cursor)
        async with self._store.unit() as uow, uow.transaction():
            for key in recorded:  # a reorg in the gap: the verifier retracts what it orphaned
                await uow.watch(key, reopen=False)
        log.warning(
            "deposits rescanned after a gap",
            chain=chain,
            from_block=first,
            to_block=cursor,
            found=found,
            credited=credited,
            watched=len(recorded),
        )
