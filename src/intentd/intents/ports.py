"""What creating intents needs from the outside world: the intent store, as protocols.

``adapters.postgres.intent_inserts.PostgresIntentStore`` implements them on PostgreSQL; the unit
tests use an in-memory fake (``tests/unit/intents/intent_store_fakes.py``).

The writer (``intents.writer``) decides how creates are grouped and what a failure
fails; the store only runs statements and says which of its errors are which (a
row the database refuses, or any error the database answered a statement with),
so the writer never names a database library.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from intentd.contract.record import IntentRow, IntentTerms

__all__ = ["AddressedIntent", "IntentSession", "IntentStore", "NewIntent", "NoConnection"]


@dataclass(frozen=True, slots=True, kw_only=True)
class NewIntent(IntentTerms):
    """An intent to store, as planned from a request (``intents.service.plan_intent``)."""

    idempotency_key: str | None
    request_hash: str


@dataclass(frozen=True, slots=True)
class AddressedIntent:
    """A new intent with its derivation index and the address derived from it."""

    new: NewIntent
    address_index: int
    intent_address: str


class IntentSession(Protocol):
    """One connection of the store; each statement commits on its own."""

    async def take_indexes(self, count: int) -> list[int]:
        """``count`` derivation indexes never handed out before (a sequence: never reused)."""
        ...

    async def insert(self, items: Sequence[AddressedIntent]) -> dict[int, IntentRow]:
        """Insert ``items`` with one statement; the rows written, by address index.

        An item whose client already used its ``idempotency_key`` (before, or earlier
        in ``items``) is not written and has no row in the answer. Raises if the
        statement fails: then none of ``items`` was written.
        """
        ...

    async def insert_within(
        self, items: Sequence[AddressedIntent], max_pending: int
    ) -> tuple[dict[int, IntentRow], frozenset[int]]:
        """As :meth:`insert`, but none that would give its client more than
        ``max_pending`` PENDING intents (``intents.open_limit.refused``): the rows
        written, and the address indexes of the items refused for it.

        One transaction, holding a lock per client of ``items`` from before the count
        to the commit, so concurrent calls for a client count one after the other.
        Raises if it fails: then none of ``items`` was written.
        """
        ...


class IntentStore(Protocol):
    def session(self, *, within: float | None = None) -> AbstractAsyncContextManager[IntentSession]:
        """A connection for a write (the index draw and the inserts of one batch);
        :class:`NoConnection` if none comes free within ``within`` seconds."""
        ...

    async def find_by_idempotency_key(
        self, client_id: UUID, key: str
    ) -> tuple[IntentRow, str] | None:
        """The intent a client created with ``key``, and the hash of that request."""
        ...

    def refuses_row(self, error: Exception) -> bool:
        """Whether ``error`` is the database refusing a row (a data error or a
        constraint), which writing each row alone would pin on one of them."""
        ...

    def answered_with_error(self, error: Exception) -> bool:
        """Whether ``error`` is an error the database answered a statement with (the
        session is still usable), not a timeout or a lost connection."""
        ...


class NoConnection(Exception):
    """No database connection came free in time (nothing was written)."""
