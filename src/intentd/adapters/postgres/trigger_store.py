"""Trigger-processing's bookkeeping in PostgreSQL: ``scanning.ports.TriggerStore``.

A session is one connection (the API's, with its timeouts): the intent and its
recorded deposits (``adapters.postgres.intent_store``,
``adapters.postgres.intent_scans``), the scan's
progress, and a :class:`~intentd.adapters.postgres.lifecycle_uow.PostgresUnitOfWork` on the same
connection for crediting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from intentd.adapters.postgres import Connection, intent_scans, intent_store, trigger_deposits
from intentd.adapters.postgres.lifecycle_uow import PostgresUnitOfWork
from intentd.contract.record import IntentRow
from intentd.domain.deposits import RecordedDeposit
from intentd.scanning.ports import ScanProgress

__all__ = ["PostgresTriggerSession", "PostgresTriggerStore"]


class PostgresTriggerSession:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._uow = PostgresUnitOfWork(conn)

    @property
    def uow(self) -> PostgresUnitOfWork:
        return self._uow

    async def intent(self, intent_id: int) -> IntentRow | None:
        return await intent_store.get_by_id(self._conn, intent_id)

    async def deposits_of(self, intent_id: int) -> list[RecordedDeposit]:
        return await intent_scans.deposits_of(self._conn, intent_id)

    async def progress(self, intent_id: int) -> ScanProgress | None:
        return await intent_scans.load(self._conn, intent_id)

    async def start(self, intent_id: int, chain: str, first_block: int) -> ScanProgress:
        return await intent_scans.start(self._conn, intent_id, chain, first_block)

    async def advance(self, intent_id: int, scanned_to: int, scanned_hash: str) -> None:
        await intent_scans.advance(self._conn, intent_id, scanned_to, scanned_hash)

    async def rewind(self, intent_id: int, block_number: int) -> ScanProgress | None:
        await trigger_deposits.rewind_scan(self._conn, intent_id, block_number)
        return await intent_scans.load(self._conn, intent_id)


class PostgresTriggerStore:
    """Sessions on the connections of ``connection`` (e.g. the API's ``Database``)."""

    def __init__(self, connection: Callable[[], AbstractAsyncContextManager[Connection]]) -> None:
        self._connection = connection

    @asynccontextmanager
    async def session(self) -> AsyncIterator[PostgresTriggerSession]:
        async with self._connection() as conn:
            yield PostgresTriggerSession(conn)
