"""``intentd intents rescan``: the command's wiring (the scan is ``scanning.rescan``).

Finds the chain and the intent, opens the chain's client and a store on the pool, and
runs :func:`~intentd.scanning.rescan.rescan_range`.
"""

from __future__ import annotations

from datetime import datetime

from intentd.adapters.evm.chain_reader import open_chain
from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.chain.blocks import BlockRange
from intentd.lifecycle.chain_book import ChainBook
from intentd.scanning.rescan import READ_ATTEMPTS, Rescanned, RescanRefused, rescan_range
from intentd.settings import Settings

__all__ = ["RescanRefused", "Rescanned", "rescan"]


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
    _, reader = open_chain(config, attempts=READ_ATTEMPTS)
    try:
        return await rescan_range(
            settings,
            PostgresStore(pool),
            reader,
            config,
            row,
            blocks=blocks,
            now=now,
            book=ChainBook.of_settings(settings),  # the one of this command's process
        )
    finally:
        await reader.close()
