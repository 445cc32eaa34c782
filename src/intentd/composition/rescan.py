"""``intentd intents rescan``: credit what reached an intent address in a block range.

The operator's way back for a payment the pollers no longer watch for (it arrived
after the intent's watch window, ``indexer.watch_retention_days``; docs/runbook.md).
The range is read and decoded with the poller's own code
(``chain.evm.range_deposits.scan_range``, watching only this address, so a native
transfer counts only with a successful receipt), and each deposit found is credited as
trigger-processing credits (``lifecycle.crediting.credit`` with ``watch``): once,
whoever else finds it (unique on its identity), decided by the lifecycle (a payment to
a terminal intent is a late deposit: refunded, or retained below ``min_sweep``), and
watched by the trigger verifier, which retracts it if a reorg removes its block.

Only blocks up to the chain's confirmed head are scanned (the range is refused
otherwise). ETH that reached the address through a contract (an internal call) is not
found: no balance reconciliation is run (docs/indexer.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog

from intentd import wire
from intentd.adapters import intent_store
from intentd.adapters.evm.chain_reader import EvmChainReader, open_chain
from intentd.adapters.lifecycle_uow import PostgresUnitOfWork
from intentd.adapters.postgres import Pool
from intentd.chain.blocks import BlockRange, confirmed_head
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.range_deposits import scan_range
from intentd.contract.record import IntentRow
from intentd.domain.deposits import Deposit
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.crediting import credit
from intentd.settings import Settings

__all__ = ["RescanRefused", "Rescanned", "rescan"]

log = structlog.get_logger()
_READ_ATTEMPTS = 3


class RescanRefused(Exception):
    """The rescan cannot be done as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class Rescanned:
    intent: IntentRow
    blocks: BlockRange
    found: list[tuple[str, int, str]]
    """(deposit id, amount, outcome) of each deposit found, in chain order."""


async def rescan(
    settings: Settings, pool: Pool, address: str, chain: str, blocks: BlockRange, *, now: datetime
) -> Rescanned:
    """Scan ``blocks`` of ``chain`` for transfers to ``address`` and credit them."""
    config = settings.chains.get(chain)
    if config is None:
        raise RescanRefused(f"no chain {chain!r} in the configuration")
    async with pool.acquire() as conn:
        row = await intent_store.get_by_address(conn, address)
    if row is None:
        raise RescanRefused(f"no intent at {address}")
    _, reader = open_chain(config, attempts=_READ_ATTEMPTS)
    try:
        head = confirmed_head(await reader.latest_block(), config.confirmations)
        if blocks.last > head:
            raise RescanRefused(f"block {blocks.last} is above {chain}'s confirmed head {head}")
        book = ChainBook.of_settings(settings)
        found: list[tuple[str, int, str]] = []
        for chunk in blocks.chunks(config.batch_size):
            for deposit in await _deposits(reader, config.name, row, chunk, settings):
                async with pool.acquire() as conn:
                    outcome = await credit(
                        PostgresUnitOfWork(conn), book, deposit, now=now, watch=True
                    )
                found.append((str(deposit.key), deposit.amount, outcome.value))
                log.info("rescan credited", deposit=str(deposit.key), outcome=outcome.value)
    finally:
        await reader.close()
    return Rescanned(row, blocks, found)


async def _deposits(
    reader: EvmChainReader, chain: str, row: IntentRow, blocks: BlockRange, settings: Settings
) -> list[Deposit]:
    tokens = frozenset(t.address.lower() for t in settings.chains[chain].tokens)
    for attempt in range(1, _READ_ATTEMPTS + 1):
        raw = await reader.read_range(blocks)
        try:
            _, transfers = await scan_range(
                chain,
                reader,
                raw,
                blocks,
                tokens=tokens,
                watched=WatchedAddresses([row.intent_address]),
            )
        except InconsistentAnswer:
            if attempt == _READ_ATTEMPTS:
                raise
            continue
        return [wire.found_deposit(chain, transfer) for transfer in transfers]
    raise AssertionError("unreachable")
