"""The lifecycle's services called as the consumer calls them, on a connection and the
settings: wire message in, outcome out (for integration tests on real PostgreSQL)."""

from __future__ import annotations

from datetime import datetime

from intentd import wire
from intentd.adapters.postgres import Connection
from intentd.adapters.postgres.lifecycle_uow import PostgresUnitOfWork
from intentd.lifecycle import crediting, handlers, retractions
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.outcomes import Outcome, Unappliable
from intentd.messages import ActionResultMessage, DepositMessage, RetractionMessage
from intentd.settings import Settings

__all__ = [
    "Outcome",
    "Unappliable",
    "apply_action_result",
    "apply_deposit",
    "apply_retraction",
    "expire",
]


async def apply_deposit(
    conn: Connection, settings: Settings, message: DepositMessage, *, now: datetime
) -> Outcome:
    book = ChainBook.of_settings(settings)
    return await crediting.credit(PostgresUnitOfWork(conn), book, wire.deposit(message), now=now)


async def apply_retraction(
    conn: Connection, settings: Settings, message: RetractionMessage, *, now: datetime
) -> Outcome:
    book = ChainBook.of_settings(settings)
    retraction = wire.retraction(message)
    return await retractions.retract(PostgresUnitOfWork(conn), book, retraction, now=now)


async def apply_action_result(
    conn: Connection, settings: Settings, message: ActionResultMessage, *, now: datetime
) -> Outcome:
    book = ChainBook.of_settings(settings)
    result = wire.action_result(message)
    return await handlers.apply_action_result(PostgresUnitOfWork(conn), book, result, now=now)


async def expire(conn: Connection, settings: Settings, intent_id: int, *, now: datetime) -> Outcome:
    book = ChainBook.of_settings(settings)
    return await handlers.expire(PostgresUnitOfWork(conn), book, intent_id, now=now)
