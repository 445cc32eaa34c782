"""``intentd intents rescan``: credit what reached an intent address in a block range.

The operator's way back for a payment the pollers no longer watch for (it arrived
after the intent's watch window, ``indexer.watch_retention_days``; docs/runbook.md).
The range is read and decoded with the poller's own code
(``chain.evm.range_deposits.scan_range`` through :meth:`ScanCredits.sweep
<intentd.scanning.service.ScanCredits.sweep>`, watching only this address, so a native
transfer counts only with a successful receipt), and each deposit found is credited as
trigger-processing credits (``lifecycle.crediting.credit`` with ``watch``): once,
whoever else finds it (unique on its identity), decided by the lifecycle (a payment to
a terminal intent is a late deposit: refunded, or retained below ``min_sweep``), and
watched by the trigger verifier, which retracts it if a reorg removes its block.

Only blocks up to the chain's confirmed head are scanned (the range is refused
otherwise). ETH that reached the address through a contract (an internal call) is not
found: no balance reconciliation is run (docs/indexer.md). The command's wiring (the
database, the chain's client) is ``composition.rescan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog

from intentd.chain.blocks import BlockRange, confirmed_head
from intentd.chain.evm.ports import ChainReader
from intentd.contract.record import IntentRow
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.ports import Store
from intentd.scanning.service import ScanCredits
from intentd.settings import ChainConfig, Settings

__all__ = ["READ_ATTEMPTS", "RescanRefused", "Rescanned", "rescan_range"]

log = structlog.get_logger()
READ_ATTEMPTS = 3


class RescanRefused(Exception):
    """The rescan cannot be done as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class Rescanned:
    intent: IntentRow
    blocks: BlockRange
    found: list[tuple[str, int, str]]
    """(deposit id, amount, outcome) of each deposit found, in chain order."""


async def rescan_range(
    settings: Settings,
    store: Store,
    reader: ChainReader,
    config: ChainConfig,
    row: IntentRow,
    *,
    blocks: BlockRange,
    now: datetime,
    book: ChainBook,
) -> Rescanned:
    """Scan ``blocks`` of ``config``'s chain (read through ``reader``) for transfers to
    ``row``'s address and credit them."""
    head = confirmed_head(await reader.latest_block(), config.confirmations)
    if blocks.last > head:
        raise RescanRefused(f"block {blocks.last} is above {config.name}'s confirmed head {head}")
    credits = ScanCredits(settings, store, watch=True, book=book)
    found: list[tuple[str, int, str]] = []
    sweep = credits.sweep(
        config, reader, blocks, [row.intent_address], now=lambda: now, attempts=READ_ATTEMPTS
    )
    async for swept in sweep:
        for credited in swept.credited:
            assert credited.outcome is not None  # no ``refused``: an Unappliable is raised
            deposit, outcome = credited.deposit, credited.outcome
            found.append((str(deposit.key), deposit.amount, outcome.value))
            log.info("rescan credited", deposit=str(deposit.key), outcome=outcome.value)
    return Rescanned(row, blocks, found)
