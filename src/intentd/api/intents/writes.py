"""The API's intent writes: the intent writer and its store on the API's ``Database``.

:class:`AnsweringStore` is ``adapters.postgres.intent_inserts``' statements on connections of
:class:`~intentd.api.connections.Database` (every wait and every answer bounded, a
database away a 503 ``database_unavailable``). :class:`AnsweringWriter` answers the
writer's refusals as problems. A create that failed because the database went away
may have been committed: the same create with the same ``Idempotency-Key`` answers
that intent (the key is unique per client, ``ON CONFLICT DO NOTHING``), so a client
retrying after a 503 gets exactly one intent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from uuid import UUID

from intentd.adapters.postgres import intent_inserts
from intentd.adapters.postgres.intent_inserts import (
    AddressIndexes,
    ConnectionSession,
    PostgresIntentStore,
)
from intentd.api.connections import Database, database_away
from intentd.api.problems import ApiProblem
from intentd.contract.record import IntentRow
from intentd.intents.admission import AdmittingWriter, LiquidityGate
from intentd.intents.ports import IntentSession, NewIntent, NoConnection
from intentd.intents.writer import AddressSource, IntentWriteFailed, WriterBusy

__all__ = ["AnsweringStore", "AnsweringWriter"]


class AnsweringStore:
    """The writer's store (``intents.ports.IntentStore``) on ``database``: a busy pool
    is ``NoConnection`` (the writer answers ``writer_busy``), a database away a 503."""

    def __init__(self, database: Database, indexes: AddressIndexes) -> None:
        self._database = database
        self._indexes = indexes
        self._errors = PostgresIntentStore(database.pool, indexes)

    @asynccontextmanager
    async def session(self, *, within: float | None = None) -> AsyncIterator[IntentSession]:
        def busy() -> Exception:
            return NoConnection(f"no connection within {self._database.acquire_timeout} s")

        async with self._database.connection(busy=busy) as conn:
            yield ConnectionSession(conn, self._indexes, idle_limit=self._database.answer_timeout)

    async def find_by_idempotency_key(
        self, client_id: UUID, key: str
    ) -> tuple[IntentRow, str] | None:
        async with self._database.connection() as conn:
            return await intent_inserts.find_by_idempotency_key(conn, client_id, key)

    def refuses_row(self, error: Exception) -> bool:
        return self._errors.refuses_row(error)

    def answered_with_error(self, error: Exception) -> bool:
        return self._errors.answered_with_error(error)


class AnsweringWriter(AdmittingWriter):
    """The intent writer of the API, on ``database`` (``api.intent_store``'s store):
    a full writer is a 503 ``writer_busy`` problem with ``Retry-After`` (nothing of
    that create was written); a database away, or a create not answered within the
    bounds of a connection and its work, is a 503 ``database_unavailable`` (the create
    may have been committed: retried with its ``Idempotency-Key`` it answers it). With
    a ``gate``, it writes only what the relayer's float admits (``intents.admission``)."""

    def __init__(
        self,
        database: Database,
        keys: AddressSource,
        *,
        max_waiting: int,
        max_pending: int | None = None,
        gate: LiquidityGate | None = None,
    ) -> None:
        super().__init__(
            AnsweringStore(database, AddressIndexes(block=64)),
            keys,
            gate=gate,
            max_waiting=max_waiting,
            acquire_timeout=database.acquire_timeout,
            max_pending=max_pending,
        )
        self._database = database
        self._bound = database.acquire_timeout + database.answer_timeout

    async def insert(self, new: NewIntent) -> IntentRow | None:
        try:
            async with asyncio.timeout(self._bound):
                return await super().insert(new)
        except WriterBusy as exc:
            raise ApiProblem(
                503,
                "writer_busy",
                f"the server is at capacity ({exc}); retry after Retry-After seconds",
                headers={"Retry-After": "1"},
            ) from None
        except IntentWriteFailed as exc:  # the group write of several creates
            cause = exc.__cause__
            if isinstance(cause, ApiProblem):
                raise ApiProblem(
                    cause.status, cause.code, cause.detail, headers=cause.headers
                ) from None
            if cause is not None and database_away(cause):
                raise self._database.unavailable(cause) from None
            raise
        except Exception as exc:
            if not database_away(exc):
                raise
            raise self._database.unavailable(exc) from None
