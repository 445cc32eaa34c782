"""What the poll loop needs from the outside world besides the chain, as small protocols.

The adapters implement them (``adapters.postgres.cursor_store.PostgresPollerStore``,
``adapters.postgres.native_intents.PostgresOpenNativeIntents``,
``adapters.kafka.KafkaPublisher``); the unit tests use in-memory fakes. The chain's
ports are ``intentd.chain`` (the poller's reader: ``chain.evm.ports.ChainReader``,
implemented by ``adapters.evm.chain_reader.EvmChainReader``), and so are the errors
its nodes' answers raise (``chain.errors``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from intentd.chain.blocks import BlockHeader
from intentd.indexer.reorg import Cursor, PublishedDeposit
from intentd.messages import OutgoingMessage

__all__ = [
    "AddressSource",
    "DepositPublisher",
    "IntentAddress",
    "PollerStore",
]


class PollerStore(Protocol):
    """The poller's durable state for one chain (cursor, recent blocks, published deposits)."""

    async def load_cursor(self) -> Cursor | None: ...

    async def remembered_blocks(self) -> dict[int, str]:
        """Hashes of the recent processed blocks (the cursor's included), by height."""
        ...

    async def orphans(self, after: int) -> list[PublishedDeposit]:
        """Published deposits from blocks above ``after`` (orphaned by a rewind to it)."""
        ...

    async def advance(
        self,
        previous: Cursor,
        headers: Sequence[BlockHeader],
        published: Sequence[tuple[PublishedDeposit, bytes]],
        *,
        drop_orphans: bool,
    ) -> None:
        """Atomically move the cursor from ``previous`` to ``headers[-1]``.

        Remembers the recent ``headers`` and ``published`` deposits (with their
        payloads), forgets those older than the window, and with ``drop_orphans``
        forgets the orphans above ``previous`` (retracted or republished by now).
        Raises if the stored cursor is not ``previous`` (another poller moved it).
        """
        ...

    async def rewind(self, previous: Cursor, to: Cursor) -> None:
        """Atomically move the cursor back to ``to`` and forget the blocks above it.

        Published deposits above ``to`` are kept: they are the orphans the next
        batch retracts or republishes.
        """
        ...


class IntentAddress(NamedTuple):
    """An intent as the watched set sees it."""

    id: int
    address: str
    terminal_at: datetime | None
    """When it became terminal (``intents.terminal_at``); None while it is live."""


class AddressSource(Protocol):
    """The intents table, as the watched set reads it (``watch_refresh``)."""

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[IntentAddress]:
        """Intents with ``id > after_id`` or ``id in also_ids``, in id order, at most
        ``limit``."""
        ...

    async def live_intents(self, after_id: int, limit: int) -> list[IntentAddress]:
        """Live intents (no ``terminal_at``) with ``id > after_id``, in id order, at most
        ``limit``."""
        ...

    async def ended_intents(
        self, after: tuple[datetime, int] | None, until: datetime | None, limit: int
    ) -> list[IntentAddress]:
        """Terminal intents with ``(terminal_at, id) > after`` (None: any) and
        ``terminal_at <= until`` (None: any), in that order, at most ``limit``."""
        ...

    async def newest_id(self) -> int:
        """The highest intent id committed (0 if none)."""
        ...


class DepositPublisher(Protocol):
    async def publish_all(self, messages: Iterable[OutgoingMessage]) -> int:
        """Send in order; return once every message is acknowledged, or raise."""
        ...
