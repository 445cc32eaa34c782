"""Trigger-processing: rescan an intent's window on its source chain, credit what is found.

For an intent on chain C, created at time T:

1. The window starts at the first block of C whose timestamp is at least
   ``T - api.trigger_clock_skew`` (binary search over block timestamps, found once
   and stored in ``intent_scans``); it ends at C's confirmed head (the poller's
   confirmation depth).
2. The blocks not scanned yet (at most ``api.trigger_max_blocks`` per call) are read
   and decoded with the poller's own code (``EvmChainReader.read_range`` and
   ``indexer.range_deposits.scan_range``, watching only this intent's address:
   native value counts only with a successful receipt, see ``indexer.tx_types``).
   The hash of the last block scanned is stored with the progress; if the chain no
   longer has that block, a reorg replaced scanned blocks, and the last ``WINDOW``
   (256) blocks are scanned again (their new branch may hold a payment the old one
   did not).
3. Each deposit found is credited by the service the lifecycle credits the poller's
   deposits with (``lifecycle.crediting.credit``): under the intent's row lock and
   unique on its identity ``(chain, tx_hash, token, transfer_index)``, so a deposit
   seen by the poller, by an earlier call or by a concurrent call is credited once.
   Events leave through the outbox.
   In the same transaction the deposit is remembered (``trigger_deposits``) for the
   lifecycle's :class:`~intentd.lifecycle.trigger_verifier.TriggerVerifier`, which
   retracts it if a reorg removes its block (no poller covers it).
   For an intent whose ``tokenIn`` is the native coin, the ETH that reached the address
   through a contract is found as the poller finds it (``indexer.reconciliation``, balance
   reconciliation): the same deposit, with the same id and amount.
4. The intent address's on-chain balance of ``tokenIn`` at the confirmed head is
   read as a cross-check and returned with the deposits and the intent record.

Safe to repeat; calls for one intent are serialised within a process.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from intentd import wire
from intentd.adapters import chain_lookup, intent_scans, intent_store, trigger_deposits
from intentd.adapters.chain import (
    EvmChainReader,
    JsonRpcClient,
    MissingResult,
    RpcError,
    RpcTransportError,
    open_chain,
)
from intentd.adapters.chain_state import EvmChainState
from intentd.adapters.cursor_store import WINDOW
from intentd.adapters.intent_scans import ScanProgress
from intentd.adapters.lifecycle_uow import PostgresUnitOfWork
from intentd.adapters.postgres import Pool
from intentd.domain.deposits import DepositKey, RecordedDeposit
from intentd.indexer.balances import Reconciled
from intentd.indexer.decoding import InconsistentAnswer
from intentd.indexer.planning import BlockRange, confirmed_head
from intentd.indexer.range_deposits import scan_range
from intentd.indexer.reconciliation import Reconciliation
from intentd.indexer.watched import WatchedAddresses
from intentd.intents.record import IntentRow
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import SEEN_BEFORE, credit
from intentd.settings import NATIVE_TOKEN, ChainConfig, Settings

__all__ = ["ChainUnavailable", "Processor", "TriggerOutcome", "first_block_at_or_after"]

log = structlog.get_logger()
_READ_ATTEMPTS = 3


class ChainUnavailable(Exception):
    """The chain's RPC did not answer usably; the caller may retry later."""


@dataclass(frozen=True, slots=True)
class TriggerOutcome:
    intent: IntentRow
    deposits: list[RecordedDeposit]
    new: frozenset[DepositKey]
    """The deposits this call recorded."""
    balance: int
    balance_block: int
    progress: ScanProgress
    confirmed_head: int


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

    def __init__(self, settings: Settings, pool: Pool) -> None:
        self._settings = settings
        self._book = ChainBook.of_settings(settings)
        self._pool = pool
        self._readers: dict[str, tuple[JsonRpcClient, EvmChainReader]] = {}
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()

    async def close(self) -> None:
        for _, reader in self._readers.values():
            await reader.close()
        self._readers.clear()

    def _reader(self, chain: ChainConfig) -> tuple[JsonRpcClient, EvmChainReader]:
        found = self._readers.get(chain.name)
        if found is None:
            found = self._readers[chain.name] = open_chain(chain, attempts=_READ_ATTEMPTS)
        return found

    async def trigger(self, row: IntentRow, *, now: datetime) -> TriggerOutcome:
        lock = self._locks.get(row.id)
        if lock is None:
            lock = self._locks[row.id] = asyncio.Lock()
        async with lock:
            try:
                return await self._trigger(row, now)
            except (RpcError, RpcTransportError, MissingResult, InconsistentAnswer) as exc:
                log.warning("trigger-processing: chain read failed", error=str(exc))
                raise ChainUnavailable(f"{row.source_chain}: {exc}") from exc

    async def _trigger(self, row: IntentRow, now: datetime) -> TriggerOutcome:
        chain = self._settings.chains[row.source_chain]
        client, reader = self._reader(chain)
        head = confirmed_head(await reader.latest_block(), chain.confirmations)
        progress = await self._progress(row, chain, client, head)
        progress = await self._follow_reorg(row, reader, progress)
        new: set[DepositKey] = set()
        last = min(head, progress.scanned_to + self._settings.api.trigger_max_blocks)
        if progress.scanned_to < last:
            window = BlockRange(progress.scanned_to + 1, last)
            scanned_hash = None
            for blocks in window.chunks(chain.batch_size):
                found, scanned_hash = await self._scan(row, chain, reader, blocks, now)
                new |= found
            progress = ScanProgress(progress.first_block, last, scanned_hash)
        balance_block = max(head, 0)
        balance = await chain_lookup.balance(
            client, row.token_in, row.intent_address, balance_block
        )
        async with self._pool.acquire() as conn:
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
        self, row: IntentRow, chain: ChainConfig, client: JsonRpcClient, head: int
    ) -> ScanProgress:
        async with self._pool.acquire() as conn:
            progress = await intent_scans.load(conn, row.id)
        if progress is not None:
            return progress
        since = int(row.created_at.timestamp()) - self._settings.api.trigger_clock_skew

        async def timestamp_of(number: int) -> int:
            return await chain_lookup.block_timestamp(client, number)

        first = await first_block_at_or_after(since, max(head, 0), timestamp_of)
        async with self._pool.acquire() as conn:
            return await intent_scans.start(conn, row.id, chain.name, first)

    async def _follow_reorg(
        self, row: IntentRow, reader: EvmChainReader, progress: ScanProgress
    ) -> ScanProgress:
        """Scan the last ``WINDOW`` blocks again if the last one scanned was orphaned."""
        if progress.scanned_hash is None or progress.scanned_to < progress.first_block:
            return progress
        current = await reader.block_hashes([progress.scanned_to])
        if current[progress.scanned_to] == progress.scanned_hash:
            return progress
        async with self._pool.acquire() as conn:
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

    def _reconciliation(self, row: IntentRow, chain: ChainConfig) -> Reconciliation | None:
        """The balance reconciliation of a native-coin intent's address, else None."""
        if row.token_in.lower() != NATIVE_TOKEN.lower() or row.source_chain != chain.name:
            return None
        client, _ = self._reader(chain)
        return Reconciliation(chain.name, EvmChainState(client))

    async def _scan(
        self,
        row: IntentRow,
        chain: ChainConfig,
        reader: EvmChainReader,
        blocks: BlockRange,
        now: datetime,
    ) -> tuple[set[DepositKey], str]:
        """Credit the deposits of ``blocks``; return the new ones and the last block's hash."""
        tokens = frozenset(t.address.lower() for t in chain.tokens)
        watched = WatchedAddresses([row.intent_address])
        reconciliation = self._reconciliation(row, chain)
        window = Reconciled.of_intent(
            row.intent_address, int(row.created_at.timestamp()), int(row.expires_at.timestamp())
        )
        for attempt in range(1, _READ_ATTEMPTS + 1):
            raw = await reader.read_range(blocks)
            try:
                headers, found = await scan_range(
                    chain.name,
                    reader,
                    raw,
                    blocks,
                    tokens=tokens,
                    watched=watched,
                    reconciliation=reconciliation,
                    reconciled=[window],
                )
                break
            except InconsistentAnswer:
                if attempt == _READ_ATTEMPTS:
                    raise
        deposits = [wire.found_deposit(chain.name, transfer) for transfer in found]
        new: set[DepositKey] = set()
        async with self._pool.acquire() as conn:
            uow = PostgresUnitOfWork(conn)
            for deposit in deposits:
                outcome = await credit(uow, self._book, deposit, now=now, watch=True)
                if outcome not in SEEN_BEFORE:
                    new.add(deposit.key)
            await intent_scans.advance(conn, row.id, blocks.last, headers[-1].hash)
        if deposits:
            log.info(
                "trigger-processing found deposits",
                intent_id=row.id,
                blocks=str(blocks),
                found=len(deposits),
                new=len(new),
            )
        return new, headers[-1].hash
