"""Scan a block range and credit what is found: the one service of every ranged scan.

Trigger-processing (:mod:`intentd.scanning.trigger`), ``intentd intents rescan``
(:mod:`intentd.scanning.rescan`), the recovery of a gap in a deposits log
(:mod:`intentd.scanning.gap_recovery`) and the trigger verifier
(:mod:`intentd.scanning.trigger_verifier`) all read a range with
:func:`scan_blocks` (or, for trigger-processing, the recipient-filtered reads of
:mod:`intentd.scanning.window`) and decode it with the poller's own code
(``chain.evm.range_deposits.scan_range``: the same deposits with the same identities,
every log answer proven whole, ``chain.evm.coverage``), and credit each deposit with
:meth:`ScanCredits.credit` (``lifecycle.crediting.credit``: once per identity, under
the intent's row lock, decided by the lifecycle).

:meth:`ScanCredits.sweep` does both over a range in the chain's batches, each deposit
credited in a unit of work of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from intentd import wire
from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.balances import Reconciled
from intentd.chain.evm.ports import ChainReader, RawRange
from intentd.chain.evm.range_deposits import scan_range
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.transfers import ChainTransfer
from intentd.domain.deposits import Deposit
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.outcomes import Outcome, Unappliable
from intentd.lifecycle.ports import Rates, Store, UnitOfWork
from intentd.settings import ChainConfig, Settings

__all__ = ["Credited", "ScanCredits", "Scanned", "Swept", "scan_blocks", "tokens_of"]


def tokens_of(chain: ChainConfig) -> frozenset[str]:
    """The chain's configured tokens, lowercase."""
    return frozenset(t.address.lower() for t in chain.tokens)


@dataclass(frozen=True, slots=True)
class Scanned:
    raw: RawRange
    """The range as the node answered it."""
    headers: list[BlockHeader]
    transfers: list[ChainTransfer]
    """The deposits to the watched addresses, in chain order."""


async def scan_blocks(
    chain: ChainConfig,
    reader: ChainReader,
    blocks: BlockRange,
    watched: WatchedAddresses,
    *,
    reconciliation: Reconciliation | None = None,
    reconciled: Sequence[Reconciled] | None = None,
    attempts: int = 1,
) -> Scanned:
    """``blocks`` read in full (``ChainReader.read_range``) and decoded as the poller
    decodes them, for ``watched``; read again when the answers do not fit together
    (``InconsistentAnswer``), at most ``attempts`` times, then raised."""
    for attempt in range(1, attempts + 1):
        raw = await reader.read_range(blocks)
        try:
            headers, transfers = await scan_range(
                chain.name, reader, raw, blocks, tokens=tokens_of(chain), watched=watched,
                reconciliation=reconciliation, reconciled=reconciled,
            )  # fmt: skip
        except InconsistentAnswer:
            if attempt == attempts:
                raise
            continue
        return Scanned(raw, headers, transfers)
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class Credited:
    deposit: Deposit
    outcome: Outcome | None
    """None: refused as ``Unappliable`` and handed to the sweep's ``refused``."""


@dataclass(frozen=True, slots=True)
class Swept:
    """One batch of a sweep: its blocks and what was credited in them, in chain order."""

    blocks: BlockRange
    credited: list[Credited]


OnRefused = Callable[[Deposit, Unappliable], Awaitable[None]]


class ScanCredits:
    """Credits what a scan found: ``book`` is the process's (built once, by the
    composition root), ``watch`` has the trigger verifier watch each deposit, ``valuer``
    values a revalued intent's payment (none: it awaits a price)."""

    def __init__(
        self,
        settings: Settings,
        store: Store | None = None,
        *,
        book: ChainBook,
        watch: bool = False,
        valuer: Rates | None = None,
    ) -> None:
        self._settings = settings
        self._book = book
        self._store = store
        self._watch = watch
        self._valuer = valuer

    async def credit(self, uow: UnitOfWork, deposit: Deposit, *, now: datetime) -> Outcome:
        """Credit ``deposit`` in one transaction of ``uow``."""
        return await credit(
            uow, self._book, deposit, now=now, watch=self._watch, valuer=self._valuer
        )

    async def credit_one(self, deposit: Deposit, *, now: datetime) -> Outcome:
        """Credit ``deposit`` in a unit of work of its own, from the store."""
        assert self._store is not None, "a store is needed to credit on its own"
        async with self._store.unit() as uow:
            return await self.credit(uow, deposit, now=now)

    async def sweep(
        self,
        chain: ChainConfig,
        reader: ChainReader,
        blocks: BlockRange,
        watched: Collection[str],
        *,
        now: Callable[[], datetime],
        attempts: int = 1,
        refused: OnRefused | None = None,
    ) -> AsyncIterator[Swept]:
        """Scan ``blocks`` in the chain's batches for transfers to ``watched`` and credit
        each deposit found (at ``now()``); yields each batch once credited. A deposit
        refused as ``Unappliable`` goes to ``refused`` (raised without one)."""
        addresses = WatchedAddresses(watched)
        for batch in blocks.chunks(chain.batch_size):
            scanned = await scan_blocks(chain, reader, batch, addresses, attempts=attempts)
            credited: list[Credited] = []
            for transfer in scanned.transfers:
                deposit = wire.found_deposit(chain.name, transfer)
                try:
                    outcome: Outcome | None = await self.credit_one(deposit, now=now())
                except Unappliable as exc:
                    if refused is None:
                        raise
                    await refused(deposit, exc)
                    outcome = None
                credited.append(Credited(deposit, outcome))
            yield Swept(batch, credited)
