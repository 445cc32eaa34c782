"""The poll loop of one chain (``composition.roles.poller_role`` wires it to the services).

Guarantees (see ``docs/indexer.md``):

- Blocks are processed in order, ``cursor + 1 .. confirmed head``, none skipped. A
  chain without a stored cursor and ``start_block = "latest"`` stores its start (the
  block before the confirmed head, read whole) before anything else: a poller that
  dies before its first batch starts again there, never at a newer head.
- Every deposit to an address watched when its block was matched is published, at
  least once (an address stays watched for ``WatchedIntents``' retention window after
  its intent ended, measured in the time of the blocks processed): a batch is
  published (acknowledged by Kafka) before the cursor moves past it, and the cursor
  move, the remembered blocks and the published deposits are one database transaction.
  A crash in between publishes the batch again; consumers dedupe by message id.
- ETH reaching an open native-coin intent's address through a contract is found by balance
  reconciliation (``chain.evm.reconciliation``), published with the batch under one id.
- A batch that does not extend the cursor makes the poller walk back to the common
  ancestor, rewind, and retract the published deposits the new chain lacks (before
  publishing the new chain's deposits). A reorg deeper than the remembered window
  stops the poller with :class:`~intentd.indexer.reorg.DeepReorgError`. A walk-back
  node without a block at a remembered height lags: no reorg is decided on its word.
- A read that fails (no usable answer: :class:`~intentd.chain.errors.ChainUnavailable`
  after the RPC client's retries) or does not fit together (answers from two forks,
  logs not proven whole, see ``chain.evm.coverage``) is read again after a backoff, for
  as long as it takes (``indexer.read_failures``): the cursor neither moves past blocks
  not proven nor back on a lagging node's word, and the poller does not exit for it.
- Any other failure (the database or the brokers away) ends :meth:`Poller.run` with the
  error; its supervisor starts a new poller from the stored cursor once they are back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from intentd import observability as metrics
from intentd.chain.blocks import BlockHeader, BlockRange, confirmed_head
from intentd.chain.errors import ChainUnavailable, InconsistentAnswer
from intentd.chain.evm.decoding import decode_headers
from intentd.chain.evm.ports import ChainReader, RawRange
from intentd.chain.evm.range_deposits import scan_range
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.transfers import ChainTransfer
from intentd.faults import crash_point
from intentd.indexer.planning import first_block, next_range
from intentd.indexer.ports import DepositPublisher, PollerStore
from intentd.indexer.publishing import deposit_payload, published, retraction_message
from intentd.indexer.read_failures import ReadFailures
from intentd.indexer.reorg import Cursor, Linkage, check_linkage, common_ancestor, retractions
from intentd.indexer.watch_refresh import WatchedIntents
from intentd.messages import OutgoingMessage, encode
from intentd.settings import ChainConfig
from intentd.supervision import progress
from intentd.wait import wait_any

__all__ = ["Poller"]

log = structlog.get_logger()

IDLE_REFRESH = 0.25
"""Seconds between watched-set refreshes while caught up."""

_Fetch = tuple[BlockRange, "asyncio.Task[RawRange]"]


class Poller:
    """Follows one chain at its confirmation depth and publishes deposits to watched addresses.

    Single use: call :meth:`run` once. The caller owns (and closes) the reader, store,
    publisher and address source.
    """

    def __init__(
        self,
        config: ChainConfig,
        *,
        reader: ChainReader,
        store: PollerStore,
        publisher: DepositPublisher,
        watched: WatchedIntents,
        topic: str,
        reconciliation: Reconciliation | None = None,
        idle_refresh: float = IDLE_REFRESH,
        torn_backoff: float = 0.05,
        read_backoff_cap: float = 5.0,
        wall_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self._config = config
        self._chain = config.name
        self._reader = reader
        self._store = store
        self._publisher = publisher
        self._watched = watched
        self._topic = topic
        self._reconciliation = reconciliation
        self._tokens = frozenset(token.address.lower() for token in config.tokens)
        self._idle_refresh = idle_refresh
        self._failures = ReadFailures(self._chain, base=torn_backoff, cap=read_backoff_cap)
        self._stop = asyncio.Event()  # run's, once it runs
        self._wall_clock_ms = wall_clock_ms
        self._cursor = Cursor(-1, None)
        self._chain_time: datetime | None = None  # of the newest block read (the window's)
        self._head = -1  # confirmed head, as last read
        self._head_behind = False
        self._orphans_pending = False
        self._started = False

    @property
    def cursor(self) -> Cursor:
        """The last block processed (published and recorded)."""
        return self._cursor

    async def start(self) -> None:
        """Load the cursor; :meth:`run` calls it if not done. The watched set is loaded
        when the first batch has been read (its window is measured in chain time)."""
        self._started = True
        await self._refresh_head()
        stored = await self._store.load_cursor()
        if stored is None:
            start = first_block(self._config.start_block, self._head)
            self._cursor = Cursor(start - 1, None)
            if self._config.start_block == "latest" and start > 0:
                self._cursor = await self._pin(start - 1)
        else:
            self._cursor = stored
        self._orphans_pending = bool(await self._store.orphans(self._cursor.number))
        log.info(
            "poller started",
            cursor=self._cursor.number,
            confirmed_head=self._head,
            orphans_pending=self._orphans_pending,
        )

    async def _pin(self, number: int) -> Cursor:
        """Store block ``number`` as processed (a "latest" start: nothing at or below it
        is this poller's), so a restart goes on from it. The chain's lease makes this
        poller its only writer; a cursor stored meanwhile is a conflict, as in a batch."""
        blocks = BlockRange(number, number)
        [header] = decode_headers((await self._reader.read_range(blocks)).blocks, blocks)
        await self._store.advance(Cursor(number, None), [header], [], drop_orphans=False)
        return Cursor(header.number, header.hash)

    async def run(self, stop: asyncio.Event) -> None:
        """Process blocks until ``stop`` is set; the batch in hand is finished first.

        A chain read that fails is read again after a backoff (see the module)."""
        self._stop = stop
        if not self._started:
            await self.start()
        pending: _Fetch | None = None
        try:
            while not stop.is_set():
                progress()  # a round done: a batch applied, an idle wait, or a read failed
                try:
                    if pending is None:
                        blocks = await self._plan()
                        if blocks is None:
                            await self._idle(stop)
                            continue
                        pending = self._fetch(blocks)
                    blocks, task = pending
                    raw = await task
                    # Read ahead while this batch is matched and published; dropped if it fails.
                    ahead = next_range(blocks.last, self._head, self._config.batch_size)
                    pending = self._fetch(ahead) if ahead is not None else None
                    if await self._apply(blocks, raw):
                        self._failures.succeeded()
                    else:
                        await _cancel(pending)
                        pending = None
                except ChainUnavailable as exc:  # nothing was published: read again
                    await _cancel(pending)
                    pending = None
                    await self._read_again("unavailable", repr(exc))
        finally:
            await _cancel(pending)

    async def _plan(self) -> BlockRange | None:
        blocks = next_range(self._cursor.number, self._head, self._config.batch_size)
        if blocks is None:
            await self._refresh_head()
            blocks = next_range(self._cursor.number, self._head, self._config.batch_size)
        return blocks

    def _fetch(self, blocks: BlockRange) -> _Fetch:
        return blocks, asyncio.create_task(self._reader.read_range(blocks))

    async def _refresh_head(self) -> None:
        latest = await self._reader.latest_block()
        self._head = confirmed_head(latest, self._config.confirmations)
        behind = self._head < self._cursor.number
        if behind and not self._head_behind:
            # A lagging node says so briefly; a chain reset or a wrong RPC says so forever.
            log.warning(
                "the chain's confirmed head is below the cursor; waiting for it"
                " (a lagging node, a reset chain, or an RPC URL of another chain?)",
                confirmed_head=self._head,
                cursor=self._cursor.number,
            )
        elif self._head_behind and not behind:
            log.info("the chain's head caught up with the cursor", confirmed_head=self._head)
        self._head_behind = behind
        metrics.BLOCKS_BEHIND.labels(self._chain).set(max(self._head - self._cursor.number, 0))

    async def _idle(self, stop: asyncio.Event) -> None:
        """Wait ``poll_interval`` (or until stop), refreshing the watched set meanwhile."""
        deadline = time.monotonic() + self._config.poll_interval
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            await wait_any(stop, within=min(self._idle_refresh, remaining))
            await self._refresh_watched()

    async def _refresh_watched(self) -> None:
        """Refresh the watched set as of the chain time; not before a batch gave one."""
        if self._chain_time is None:
            return
        if await self._watched.refresh(self._chain_time):
            metrics.WATCHED_ADDRESSES.labels(self._chain).set(len(self._watched))

    async def _apply(self, blocks: BlockRange, raw: RawRange) -> bool:
        """Publish and record one batch; False if it must be read again (reorg, torn read)."""
        # Refreshed after the blocks were read: every intent committed before that is
        # matched. The watch window is measured at the batch's first block: every block
        # matched from now on is at least as late (but after a rewind: REORG_MARGIN).
        if raw.blocks:
            first = datetime.fromtimestamp(int(raw.blocks[0]["timestamp"], 16), UTC)
            self._chain_time = max(first, self._chain_time or first)
        await self._refresh_watched()
        try:
            headers, deposits = await scan_range(
                self._chain,
                self._reader,
                raw,
                blocks,
                tokens=self._tokens,
                watched=self._watched.addresses,
                reconciliation=self._reconciliation,
                reconcile_if=self._extends_cursor,
            )
            linkage = check_linkage(self._cursor, headers)
        except InconsistentAnswer as exc:
            await self._torn(blocks, str(exc))
            return False
        if linkage is Linkage.TORN:
            await self._torn(blocks, "blocks of the batch do not link")
            return False
        if linkage is Linkage.FORKED:
            await self._rewind()
            return False
        await self._publish_and_advance(headers, deposits)
        log.debug("batch done", blocks=str(blocks), deposits=len(deposits))
        return True

    def _extends_cursor(self, headers: list[BlockHeader]) -> bool:
        return check_linkage(self._cursor, headers) is Linkage.LINKED

    async def _publish_and_advance(
        self, headers: list[BlockHeader], deposits: list[ChainTransfer]
    ) -> None:
        """Publish (retractions first), then move the cursor: at least once, never lost."""
        observed = self._wall_clock_ms()
        orphans = await self._store.orphans(self._cursor.number) if self._orphans_pending else []
        gone = retractions(orphans, deposits)
        messages = [
            OutgoingMessage(
                self._topic, orphan.intent_address, encode(retraction_message(self._chain, orphan))
            )
            for orphan in gone
        ]
        records = []
        chain_id = self._config.chain_id
        for deposit in deposits:
            payload = deposit_payload(self._chain, chain_id, deposit, observed)
            messages.append(OutgoingMessage(self._topic, deposit.to_address, payload))
            records.append((published(deposit), payload))
        if messages:
            await self._publisher.publish_all(messages)
        crash_point("poller.after_publish")
        await self._store.advance(
            self._cursor, headers, records, drop_orphans=self._orphans_pending
        )
        self._orphans_pending = False
        last = headers[-1]
        self._cursor = Cursor(last.number, last.hash)

        metrics.POLLER_BLOCK.labels(self._chain).set(last.number)
        metrics.BLOCKS_BEHIND.labels(self._chain).set(max(self._head - last.number, 0))
        if deposits:
            metrics.DEPOSITS_PUBLISHED.labels(self._chain).inc(len(deposits))
        if gone:
            metrics.RETRACTIONS.labels(self._chain).inc(len(gone))
            log.warning(
                "deposits retracted after a reorg",
                retracted=[f"{o.tx_hash}:{o.log_index}" for o in gone],
            )

    async def _torn(self, blocks: BlockRange, reason: str) -> None:
        """A self-contradicting read (a node mid-reorg, two nodes apart): wait, read again."""
        await self._read_again("inconsistent", f"blocks {blocks}: {reason}")

    async def _read_again(self, reason: str, error: str) -> None:
        """Count a failed read and wait its backoff (or until stop) before the next."""
        delay = self._failures.failed(reason, error, f"{self._cursor.number + 1}..")
        await wait_any(self._stop, within=delay)

    async def _rewind(self) -> None:
        """Walk back to the common ancestor and rewind the cursor there."""
        remembered = await self._store.remembered_blocks()
        canonical = await self._reader.block_hashes(sorted(remembered))
        lacking = sorted(n for n in remembered if canonical.get(n) is None)
        if lacking:
            # A node behind our cursor says nothing of a reorg: only another block does.
            await self._read_again(
                "lagging",
                f"the node has no block at remembered heights {lacking[0]}..{lacking[-1]}",
            )
            return
        ancestor = common_ancestor(remembered, canonical)  # raises DeepReorgError
        if ancestor == self._cursor:
            # The node's answers disagree with each other (e.g. a lagging failover node).
            reading = BlockRange(ancestor.number + 1, ancestor.number + 1)
            await self._torn(reading, "parent mismatch at the cursor, yet no reorg")
            return
        await self._store.rewind(self._cursor, ancestor)
        metrics.REORGS.labels(self._chain).inc()
        log.warning(
            "reorg: rewound to the common ancestor",
            cursor=self._cursor.number,
            ancestor=ancestor.number,
            depth=self._cursor.number - ancestor.number,
        )
        self._cursor = ancestor
        self._orphans_pending = True


async def _cancel(pending: _Fetch | None) -> None:
    """Cancel a read-ahead and collect its outcome (its error, if any, is moot)."""
    if pending is None:
        return
    _, task = pending
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()  # retrieved: the range is read again if still wanted
