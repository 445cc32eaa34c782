"""Trigger-processing: rescan an intent's window on its source chain, credit what is found.

For an intent on chain C, created at time T:

0. An intent in a terminal state (COMPLETED, EXPIRED, REFUNDED, CANCELLED: no move
   leaves it) is answered from the store, without reading the chain: its record and
   its recorded deposits, with ``balance`` and ``progress`` None. Otherwise the call
   must pass the :class:`~intentd.api.trigger_gate.TriggerGate` (a per-intent cooldown
   of ``api.trigger_cooldown`` seconds and at most ``api.trigger_max_per_client``
   calls of one caller at once, a client or a session, over every process), else
   :class:`~intentd.api.trigger_gate.TriggerRefused` (a 429 with ``Retry-After``).
   The whole call has a deadline of ``api.trigger_timeout`` seconds (RPC reads, waits
   for the RPC client's connections, the database); past it, or when the node does
   not answer usably, :class:`ChainUnavailable` (a 503). What was credited and
   scanned until then is kept.
1. The window starts at the first block of C whose timestamp is at least
   ``T - api.trigger_clock_skew`` (binary search over block timestamps, found once
   and stored in ``intent_scans``); it ends at C's confirmed head (the poller's
   confirmation depth).
2. The blocks not scanned yet are read as narrowly as the intent allows
   (``api.trigger_scan``): for a token intent, ``eth_getLogs`` filtered by the intent's
   address as recipient, at most ``api.trigger_max_log_blocks`` blocks per call (a
   week of Base blocks in one call), no block read in full; for a native-coin intent,
   the blocks in full (native value counts only with a successful receipt, see
   ``chain.evm.tx_types``; the coin that arrived through a contract is found by the
   poller's balance reconciliation, ``chain.evm.reconciliation``, with the same id and
   amount), at most ``api.trigger_max_blocks`` per call. Deposits are decoded by the
   poller's code, so they have the poller's identities. The hash of the last block
   scanned is stored with the progress; if the chain no longer has that block, a
   reorg replaced scanned blocks, and the last ``WINDOW`` (256) blocks are scanned
   again (their new branch may hold a payment the old one did not).
3. Each deposit found is credited by the service the lifecycle credits the poller's
   deposits with (``lifecycle.crediting.credit``): under the intent's row lock and
   unique on its identity ``(chain, tx_hash, token, transfer_index)``, so a deposit
   seen by the poller, by an earlier call or by a concurrent call is credited once.
   Events leave through the outbox.
   In the same transaction the deposit is remembered (``trigger_deposits``) for the
   lifecycle's :class:`~intentd.lifecycle.trigger_verifier.TriggerVerifier`, which
   retracts it if a reorg removes its block (no poller covers it).
4. The intent address's on-chain balance of ``tokenIn`` at the confirmed head is
   read as a cross-check and returned with the deposits and the intent record.

Safe to repeat; calls for one intent are serialised within a process. The processor
has its own RPC client per chain (its own connections), apart from the other roles'.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime

import structlog

from intentd import wire
from intentd.adapters import intent_scans, intent_store, trigger_deposits
from intentd.adapters.cursor_store import WINDOW
from intentd.adapters.evm import chain_lookup
from intentd.adapters.evm.json_rpc import MissingResult, RpcError, RpcTransportError
from intentd.adapters.evm.state_reader import EvmChainState
from intentd.adapters.intent_scans import ScanProgress
from intentd.adapters.lifecycle_uow import PostgresUnitOfWork
from intentd.adapters.postgres import Connection
from intentd.api.connections import Database
from intentd.api.trigger_gate import TriggerGate, caller_of
from intentd.api.trigger_scan import ChainReads, native_range, open_reads, token_range
from intentd.chain.blocks import BlockRange, confirmed_head
from intentd.chain.errors import ChainUnavailable, InconsistentAnswer
from intentd.chain.evm.balances import Reconciled
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.transfers import ChainTransfer
from intentd.contract.record import IntentRow
from intentd.domain.deposits import DepositKey, RecordedDeposit
from intentd.domain.status import ALLOWED_MOVES
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import SEEN_BEFORE, credit
from intentd.lifecycle.valuation import Valuer
from intentd.pricing import PriceSource
from intentd.settings import NATIVE_TOKEN, ChainConfig, Settings

__all__ = ["Processor", "TriggerOutcome", "first_block_at_or_after"]

log = structlog.get_logger()


@dataclass(frozen=True, slots=True)
class TriggerOutcome:
    intent: IntentRow
    deposits: list[RecordedDeposit]
    new: frozenset[DepositKey]
    """The deposits this call recorded."""
    balance: int | None
    """None: answered from the store (a terminal intent), nothing read on chain."""
    balance_block: int | None
    progress: ScanProgress | None
    confirmed_head: int | None


async def first_block_at_or_after(
    timestamp: int, last: int, timestamp_of: Callable[[int], Awaitable[int]]
) -> int:
    """The lowest block in ``0..last`` with a timestamp of at least ``timestamp``
    (``last + 1`` if none). Block timestamps never decrease, so a binary search
    needs about log2(last) reads."""
    low, high = 0, last + 1
    while low < high:
        middle = (low + high) // 2
        if await timestamp_of(middle) >= timestamp:
            high = middle
        else:
            low = middle + 1
    return low


class Processor:
    """Holds one RPC client per chain; close it with :meth:`close`."""

    def __init__(
        self, settings: Settings, database: Database, *, prices: PriceSource | None = None
    ) -> None:
        self._settings = settings
        self._book = ChainBook.of_settings(settings)
        # a revalued intent's payment is valued at the API's prices (none: it awaits one)
        self._rates = Valuer(settings, prices) if prices is not None else None
        self._database = database
        self._reads: dict[str, ChainReads] = {}
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()
        self._gate = TriggerGate(settings, database)

    def _connection(self) -> AbstractAsyncContextManager[Connection]:
        return self._database.connection()

    async def close(self) -> None:
        for reads in self._reads.values():
            await reads.close()
        self._reads.clear()

    def _chain_reads(self, chain: ChainConfig) -> ChainReads:
        found = self._reads.get(chain.name)
        if found is None:
            found = self._reads[chain.name] = open_reads(chain)
        return found

    async def trigger(
        self, row: IntentRow, *, now: datetime, session_id: str | None = None
    ) -> TriggerOutcome:
        """Scan and credit (see the module), for the intent's client or, with
        ``session_id``, for that session's payer; raises ``TriggerRefused`` (not now) or
        :class:`ChainUnavailable`."""
        if not ALLOWED_MOVES[row.status]:
            return await self._from_store(row)
        async with self._gate.admit(row.id, caller_of(row.client_id, session_id)):
            lock = self._locks.get(row.id)
            if lock is None:
                lock = self._locks[row.id] = asyncio.Lock()
            try:
                async with asyncio.timeout(self._settings.api.trigger_timeout), lock:
                    return await self._trigger(row, now)
            except TimeoutError:
                log.warning("trigger-processing: deadline passed", intent_id=row.id)
                raise ChainUnavailable(f"{row.source_chain}: no answer in time") from None
            except (RpcError, RpcTransportError, MissingResult, InconsistentAnswer) as exc:
                log.warning("trigger-processing: chain read failed", error=str(exc))
                raise ChainUnavailable(f"{row.source_chain}: {exc}") from exc

    async def _from_store(self, row: IntentRow) -> TriggerOutcome:
        async with self._connection() as conn:
            fresh = await intent_store.get_by_id(conn, row.id)
            deposits = await intent_scans.deposits_of(conn, row.id)
        assert fresh is not None
        return TriggerOutcome(fresh, deposits, frozenset(), None, None, None, None)

    async def _trigger(self, row: IntentRow, now: datetime) -> TriggerOutcome:
        chain = self._settings.chains[row.source_chain]
        reads = self._chain_reads(chain)
        head = confirmed_head(await reads.reader.latest_block(), chain.confirmations)
        progress = await self._progress(row, chain, reads, head)
        progress = await self._follow_reorg(row, reads, progress)
        new: set[DepositKey] = set()
        native = row.token_in.lower() == NATIVE_TOKEN.lower()
        api = self._settings.api
        limit = api.trigger_max_blocks if native else api.trigger_max_log_blocks
        last = min(head, progress.scanned_to + limit)
        if progress.scanned_to < last:
            window = BlockRange(progress.scanned_to + 1, last)
            scanned_hash = None
            # Full blocks go in the poller's batches; filtered logs in one range.
            for blocks in window.chunks(chain.batch_size) if native else [window]:
                found, scanned_hash = await self._read(row, chain, reads, blocks, native)
                new |= await self._credit(row, found, blocks, scanned_hash, now)
            progress = ScanProgress(progress.first_block, last, scanned_hash)
        balance_block = max(head, 0)
        balance = await chain_lookup.balance(
            reads.client, row.token_in, row.intent_address, balance_block
        )
        async with self._connection() as conn:
            fresh = await intent_store.get_by_id(conn, row.id)
            deposits = await intent_scans.deposits_of(conn, row.id)
        assert fresh is not None
        if balance < fresh.received and fresh.status.value == "PENDING":
            log.warning(
                "on-chain balance below the credited amount",
                intent_id=row.id,
                balance=str(balance),
                received=str(fresh.received),
            )
        return TriggerOutcome(
            intent=fresh,
            deposits=deposits,
            new=frozenset(new),
            balance=balance,
            balance_block=balance_block,
            progress=progress,
            confirmed_head=head,
        )

    async def _progress(
        self, row: IntentRow, chain: ChainConfig, reads: ChainReads, head: int
    ) -> ScanProgress:
        async with self._connection() as conn:
            progress = await intent_scans.load(conn, row.id)
        if progress is not None:
            return progress
        since = int(row.created_at.timestamp()) - self._settings.api.trigger_clock_skew

        async def timestamp_of(number: int) -> int:
            return await chain_lookup.block_timestamp(reads.client, number)

        first = await first_block_at_or_after(since, max(head, 0), timestamp_of)
        async with self._connection() as conn:
            return await intent_scans.start(conn, row.id, chain.name, first)

    async def _follow_reorg(
        self, row: IntentRow, reads: ChainReads, progress: ScanProgress
    ) -> ScanProgress:
        """Scan the last ``WINDOW`` blocks again if the last one scanned was orphaned."""
        if progress.scanned_hash is None or progress.scanned_to < progress.first_block:
            return progress
        current = await reads.reader.block_hashes([progress.scanned_to])
        if current[progress.scanned_to] == progress.scanned_hash:
            return progress
        async with self._connection() as conn:
            await trigger_deposits.rewind_scan(conn, row.id, progress.scanned_to - WINDOW + 1)
            rewound = await intent_scans.load(conn, row.id)
        assert rewound is not None
        log.warning(
            "trigger-processing: a reorg replaced scanned blocks; scanning them again",
            intent_id=row.id,
            scanned_to=progress.scanned_to,
            from_block=rewound.scanned_to + 1,
        )
        return rewound

    async def _read(
        self,
        row: IntentRow,
        chain: ChainConfig,
        reads: ChainReads,
        blocks: BlockRange,
        native: bool,
    ) -> tuple[list[ChainTransfer], str]:
        if not native:
            return await token_range(reads, chain, row.intent_address, blocks)
        return await native_range(
            reads,
            chain,
            row.intent_address,
            blocks,
            reconciliation=Reconciliation(
                chain.name,
                EvmChainState(reads.client),
                by_transaction=chain.reconciled_identity == "transaction",
            ),
            reconciled=Reconciled.of_intent(
                row.intent_address,
                int(row.created_at.timestamp()),
                int(row.expires_at.timestamp()),
            ),
        )

    async def _credit(
        self,
        row: IntentRow,
        found: list[ChainTransfer],
        blocks: BlockRange,
        scanned_hash: str,
        now: datetime,
    ) -> set[DepositKey]:
        """Credit the deposits ``found`` in ``blocks`` and record the scan; the new ones."""
        deposits = [wire.found_deposit(row.source_chain, transfer) for transfer in found]
        new: set[DepositKey] = set()
        async with self._connection() as conn:
            uow = PostgresUnitOfWork(conn)
            for deposit in deposits:
                outcome = await credit(
                    uow, self._book, deposit, now=now, watch=True, valuer=self._rates
                )
                if outcome not in SEEN_BEFORE:
                    new.add(deposit.key)
            await intent_scans.advance(conn, row.id, blocks.last, scanned_hash)
        if deposits:
            log.info(
                "trigger-processing found deposits",
                intent_id=row.id,
                blocks=str(blocks),
                found=len(deposits),
                new=len(new),
            )
        return new
