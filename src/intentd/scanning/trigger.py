"""Trigger-processing: rescan an intent's window on its source chain, credit what is found.

For an intent on chain C, created at time T:

0. An intent in a terminal state (COMPLETED, EXPIRED, REFUNDED, CANCELLED: no move
   leaves it) is answered from the store (:meth:`TriggerScanner.recorded`), without
   reading the chain: its record and its recorded deposits, with ``balance`` and
   ``progress`` None. Otherwise (:meth:`TriggerScanner.trigger`, once the API's
   ``api.trigger_gate`` let the call in) the whole call has a deadline of
   ``api.trigger_timeout`` seconds (RPC reads, waits for the RPC client's
   connections, the database); past it, or when the node does not answer usably,
   ``chain.errors.ChainUnavailable`` (a 503). What was credited and scanned until
   then is kept.
1. The window starts at the first block of C whose timestamp is at least
   ``T - api.trigger_clock_skew`` (binary search over block timestamps, found once
   and stored in ``intent_scans``); it ends at C's confirmed head (the poller's
   confirmation depth).
2. The blocks not scanned yet are read as narrowly as the intent allows
   (``scanning.window``): for a token intent, ``eth_getLogs`` filtered by the intent's
   address as recipient, at most ``api.trigger_max_log_blocks`` blocks per call (a
   week of Base blocks in one call), no block read in full; for a native-coin intent,
   the blocks in full (native value counts only with a successful receipt, see
   ``chain.evm.tx_types``; the coin that arrived through a contract is found by the
   poller's balance reconciliation, ``chain.evm.reconciliation``, with the same id and
   amount), at most ``api.trigger_max_blocks`` per call. Deposits are decoded by the
   poller's code, so they have the poller's identities. The hash of the last block
   scanned is stored with the progress; if the chain no longer has that block, a
   reorg replaced scanned blocks, and the last ``reorg_window`` (256) blocks are scanned
   again (their new branch may hold a payment the old one did not).
3. Each deposit found is credited by the service the lifecycle credits the poller's
   deposits with (``lifecycle.crediting.credit``, ``scanning.service``): under the
   intent's row lock and unique on its identity ``(chain, tx_hash, token,
   transfer_index)``, so a deposit seen by the poller, by an earlier call or by a
   concurrent call is credited once.
   Events leave through the outbox.
   In the same transaction the deposit is remembered (``trigger_deposits``) for the
   lifecycle's :class:`~intentd.scanning.trigger_verifier.TriggerVerifier`, which
   retracts it if a reorg removes its block (no poller covers it).
4. The intent address's on-chain balance of ``tokenIn`` at the confirmed head is
   read as a cross-check and returned with the deposits and the intent record.

Safe to repeat; calls for one intent are serialised within a process. The scanner
has its own RPC client per chain (its own connections, ``ScanChains``), apart from the
other roles'.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from intentd import wire
from intentd.chain.blocks import BlockRange, confirmed_head
from intentd.chain.errors import ChainUnavailable, InconsistentAnswer
from intentd.chain.evm.balances import Reconciled
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.transfers import ChainTransfer
from intentd.contract.record import IntentRow
from intentd.domain.deposits import DepositKey, RecordedDeposit
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import SEEN_BEFORE
from intentd.lifecycle.ports import Rates
from intentd.scanning.ports import ScanChain, ScanChains, ScanProgress, TriggerStore
from intentd.scanning.service import ScanCredits
from intentd.scanning.window import native_range, token_range
from intentd.settings import NATIVE_TOKEN, ChainConfig, Settings

__all__ = ["TriggerOutcome", "TriggerScanner", "first_block_at_or_after"]

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


class TriggerScanner:
    """Scans intents' windows through ``chains``, books progress in ``store``; close
    it with :meth:`close` (it closes ``chains``)."""

    def __init__(
        self,
        settings: Settings,
        store: TriggerStore,
        chains: ScanChains,
        *,
        reorg_window: int,
        valuer: Rates | None = None,
        book: ChainBook,
    ) -> None:
        self._settings = settings
        self._store = store
        self._chains = chains
        self._window = reorg_window
        self._credits = ScanCredits(settings, watch=True, valuer=valuer, book=book)
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()

    async def close(self) -> None:
        await self._chains.close()

    async def trigger(self, row: IntentRow, *, now: datetime) -> TriggerOutcome:
        """Scan and credit (see the module); raises ``ChainUnavailable``."""
        lock = self._locks.get(row.id)
        if lock is None:
            lock = self._locks[row.id] = asyncio.Lock()
        try:
            async with asyncio.timeout(self._settings.api.trigger_timeout), lock:
                return await self._trigger(row, now)
        except TimeoutError:
            log.warning("trigger-processing: deadline passed", intent_id=row.id)
            raise ChainUnavailable(f"{row.source_chain}: no answer in time") from None
        except (ChainUnavailable, InconsistentAnswer) as exc:
            log.warning("trigger-processing: chain read failed", error=str(exc))
            raise ChainUnavailable(f"{row.source_chain}: {exc}") from exc

    async def recorded(self, row: IntentRow) -> TriggerOutcome:
        """The intent and its deposits as recorded, nothing read on chain."""
        async with self._store.session() as session:
            fresh = await session.intent(row.id)
            deposits = await session.deposits_of(row.id)
        assert fresh is not None
        return TriggerOutcome(fresh, deposits, frozenset(), None, None, None, None)

    async def _trigger(self, row: IntentRow, now: datetime) -> TriggerOutcome:
        chain = self._settings.chains[row.source_chain]
        reads = self._chains.chain(chain)
        head = confirmed_head(await reads.latest_block(), chain.confirmations)
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
        balance = await reads.balance(row.token_in, row.intent_address, balance_block)
        async with self._store.session() as session:
            fresh = await session.intent(row.id)
            deposits = await session.deposits_of(row.id)
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
        self, row: IntentRow, chain: ChainConfig, reads: ScanChain, head: int
    ) -> ScanProgress:
        async with self._store.session() as session:
            progress = await session.progress(row.id)
        if progress is not None:
            return progress
        since = int(row.created_at.timestamp()) - self._settings.api.trigger_clock_skew
        first = await first_block_at_or_after(since, max(head, 0), reads.block_timestamp)
        async with self._store.session() as session:
            return await session.start(row.id, chain.name, first)

    async def _follow_reorg(
        self, row: IntentRow, reads: ScanChain, progress: ScanProgress
    ) -> ScanProgress:
        """Scan the last ``reorg_window`` blocks again if the last one scanned was orphaned."""
        if progress.scanned_hash is None or progress.scanned_to < progress.first_block:
            return progress
        current = await reads.block_hashes([progress.scanned_to])
        if current[progress.scanned_to] == progress.scanned_hash:
            return progress
        async with self._store.session() as session:
            rewound = await session.rewind(row.id, progress.scanned_to - self._window + 1)
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
        reads: ScanChain,
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
                reads.state(),
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
        async with self._store.session() as session:
            for deposit in deposits:
                outcome = await self._credits.credit(session.uow, deposit, now=now)
                if outcome not in SEEN_BEFORE:
                    new.add(deposit.key)
            await session.advance(row.id, blocks.last, scanned_hash)
        if deposits:
            log.info(
                "trigger-processing found deposits",
                intent_id=row.id,
                blocks=str(blocks),
                found=len(deposits),
                new=len(new),
            )
        return new
