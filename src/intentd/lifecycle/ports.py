"""What the lifecycle needs of the world, as small protocols (implemented in ``adapters``).

- :class:`UnitOfWork`: one connection's worth of the store, as repositories
  (``uow.intents``, ``uow.deposits``, ``uow.actions``, ``uow.holds``, ``uow.watches``,
  ``uow.outbox``, ``uow.events``: :mod:`intentd.lifecycle.repositories`); everything a
  handler does inside :meth:`UnitOfWork.transaction` commits together or not at all.
  Reads named ``lock``/``at`` take the row lock that serialises the messages of one
  intent.
- :class:`Store`: hands out units of work, says whether the database answers and
  what a failure of it means (:class:`~intentd.lifecycle.failures.Failure`).
- :class:`Inbox`: the consumed topics (a Kafka consumer with auto-commit off).
- :class:`LogProgress`: how far the lifecycle group applied them (the expiry waits).
- :class:`DeadLetters`: where dead letters go (awaited and acknowledged).
- :class:`VerifierChains`: the chains' nodes, as the trigger verifier reads them.
- :class:`Rates`: the prices a revalued intent's payment is valued at.

The values the repositories speak (:class:`ActionFacts`, :class:`OverdueHold`) are
defined in :mod:`intentd.lifecycle.repositories` (and re-exported here), the consumer's
:class:`InboxRecord` here, all below the adapters; a message it publishes itself (a
dead letter) is :class:`intentd.messages.OutgoingMessage`.

Fakes of all of them live in ``tests/unit/lifecycle/`` (``lifecycle_fakes.py`` and
its neighbours).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from intentd.chain.evm.ports import ChainReader, StateReader
from intentd.contract.record import IntentRow
from intentd.domain.deposits import DepositKey
from intentd.domain.valuation import Rate
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.repositories import (
    ActionFacts,
    Actions,
    Deposits,
    Events,
    Holds,
    Intents,
    Outbox,
    OverdueHold,
    Watches,
)
from intentd.messages import OutgoingMessage
from intentd.settings import ChainConfig

__all__ = [
    "ActionFacts",
    "DeadLetters",
    "DepositChain",
    "Inbox",
    "InboxRecord",
    "LogPositions",
    "OutgoingMessage",
    "OverdueHold",
    "Rates",
    "Store",
    "UnitOfWork",
    "VerifierChains",
]


class UnitOfWork(Protocol):
    """One connection's worth of the store: its repositories, and the transaction they
    all write in (:mod:`intentd.lifecycle.repositories`)."""

    def transaction(self) -> AbstractAsyncContextManager[Any]:
        """A transaction (a savepoint inside one already open)."""
        ...

    @property
    def intents(self) -> Intents: ...
    @property
    def deposits(self) -> Deposits: ...
    @property
    def actions(self) -> Actions: ...
    @property
    def holds(self) -> Holds: ...
    @property
    def watches(self) -> Watches: ...
    @property
    def outbox(self) -> Outbox: ...
    @property
    def events(self) -> Events: ...


class Rates(Protocol):
    """The prices a revalued intent's payment is valued at now
    (:class:`~intentd.lifecycle.valuation.Valuer`; a cache read, never I/O)."""

    def rate(self, row: IntentRow) -> Rate | None:
        """None: ``row`` is not revalued, or a price it needs cannot be trusted now."""
        ...


class Store(Protocol):
    def unit(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work on a connection of its own, for as long as the context lasts."""
        ...

    async def ping(self) -> None:
        """Return if the database answers; raise otherwise."""
        ...

    def classify(self, exc: BaseException) -> Failure:
        """What an exception raised while working on this store means."""
        ...


class InboxRecord(Protocol):
    """What the consumer reads of a consumed record."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


class Inbox(Protocol):
    """The consumed topics (a Kafka group consumer with auto-commit off)."""

    async def getmany(self, *, timeout_ms: int) -> Mapping[Any, Sequence[InboxRecord]]: ...

    async def commit(self, positions: Mapping[Any, int]) -> object:
        """Commit the next offset to read per partition (a commit lost to a rebalance
        is no error: the new owner replays the tail)."""
        ...


class LogProgress(Protocol):
    """How far the lifecycle's group (every replica) has applied its topics."""

    async def ends(self) -> Mapping[tuple[str, int], int] | None:
        """The end offset of every partition of the topics now; None if a topic's
        partitions are not known yet."""
        ...

    async def applied(self, ends: Mapping[tuple[str, int], int]) -> bool:
        """Whether the group's committed position reached ``ends`` in every partition."""
        ...


class DeadLetters(Protocol):
    async def publish(self, message: OutgoingMessage) -> None:
        """Send one message and wait for its acknowledgement."""
        ...


class LogPositions(Protocol):
    """What the lifecycle keeps of its place in the deposits logs, and the sources a gap
    in them is recovered from (``scanning.gap_recovery``)."""

    async def record_applied_block(self, topic: str, partition: int, block_number: int) -> None:
        """Remember the block of the last chain message applied from ``topic:partition``."""
        ...

    async def applied_block(self, topic: str, partition: int) -> int | None: ...

    async def poller_cursor(self, chain: str) -> int | None:
        """The last block the chain's poller published; None before its first."""
        ...

    async def intent_addresses(self) -> list[str]: ...

    async def recorded_deposits(self, chain: str, first: int, last: int) -> list[DepositKey]:
        """The deposits of ``chain`` in blocks ``first..last`` recorded for an intent and
        not retracted."""
        ...

    async def replay_outbox(self, topic: str) -> int:
        """Mark every kept outbox row of ``topic`` unpublished; return how many."""
        ...


class DepositChain(ChainReader, Protocol):
    """One chain's node, as the trigger verifier reads it."""

    async def receipt_at(self, tx_hash: str, number: int) -> tuple[str | None, Any]:
        """The node's hash of block ``number`` (None if it has no such block) and the
        transaction's receipt (None if it has none), both answered by one node (one
        request): "no receipt" is evidence only from a node that has the block."""
        ...

    def state(self) -> StateReader:
        """The node's balances, receipts and traces, for the balance reconciliation."""
        ...


class VerifierChains(Protocol):
    """The nodes of the configured chains (opened on first use, until :meth:`close`)."""

    def reader(self, chain: ChainConfig) -> DepositChain: ...

    def failed_read(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a failed or contradictory answer of a node (nothing to
        decide on this round), rather than a bug."""
        ...

    async def close(self) -> None: ...
