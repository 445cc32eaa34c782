"""Trigger-processing as the API serves it: the limits in front of the scan.

The scan-and-credit itself is :class:`~intentd.scanning.trigger.TriggerScanner` (one
home for ranged scans, :mod:`intentd.scanning`). Here: an intent in a terminal state is
answered from the store without the gate; any other call must pass the
:class:`~intentd.api.trigger_gate.TriggerGate` (a per-intent cooldown of
``api.trigger_cooldown`` seconds and at most ``api.trigger_max_per_client`` calls of
one caller at once, a client or a session, over every process), else
:class:`~intentd.api.trigger_gate.TriggerRefused` (a 429 with ``Retry-After``); a node
that does not answer usably in time is ``chain.errors.ChainUnavailable`` (a 503).
"""

from __future__ import annotations

from datetime import datetime

from intentd.adapters.evm.scan_chains import EvmScanChains
from intentd.adapters.postgres.cursor_store import WINDOW
from intentd.adapters.postgres.trigger_store import PostgresTriggerStore
from intentd.api.connections import Database
from intentd.api.trigger_gate import TriggerGate, caller_of
from intentd.contract.record import IntentRow
from intentd.domain.status import ALLOWED_MOVES
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.valuation import Valuer
from intentd.pricing import PriceSource
from intentd.scanning.trigger import TriggerOutcome, TriggerScanner
from intentd.settings import Settings

__all__ = ["Processor"]


class Processor:
    """Holds one RPC client per chain (the scanner's); close it with :meth:`close`."""

    def __init__(
        self,
        settings: Settings,
        database: Database,
        *,
        prices: PriceSource | None = None,
        book: ChainBook,
    ) -> None:
        # a revalued intent's payment is valued at the API's prices (none: it awaits one)
        self._scanner = TriggerScanner(
            settings,
            PostgresTriggerStore(database.connection),
            EvmScanChains(),
            reorg_window=WINDOW,
            valuer=Valuer(settings, prices) if prices is not None else None,
            book=book,
        )
        self._gate = TriggerGate(settings, database)

    async def close(self) -> None:
        await self._scanner.close()

    async def trigger(
        self, row: IntentRow, *, now: datetime, session_id: str | None = None
    ) -> TriggerOutcome:
        """Scan and credit (``scanning.trigger``), for the intent's client or, with
        ``session_id``, for that session's payer; raises ``TriggerRefused`` (not now) or
        ``ChainUnavailable``."""
        if not ALLOWED_MOVES[row.status]:
            return await self._scanner.recorded(row)
        async with self._gate.admit(row.id, caller_of(row.client_id, session_id)):
            return await self._scanner.trigger(row, now=now)
