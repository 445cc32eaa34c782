"""An in-memory intent store (``intents.ports.IntentStore``) for the writer's tests.

Statements take ``delay`` seconds; a row can be refused (a constraint, as PostgreSQL
refuses a CHECK) and a statement can lose its connection. Every statement and every
session is recorded, so tests can say how creates were grouped.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from decimal import Decimal
from uuid import UUID, uuid4

from intentd.contract.record import IntentRow
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.intents.open_limit import refused
from intentd.intents.ports import AddressedIntent, NewIntent, NoConnection

NOW = datetime(2026, 11, 24, tzinfo=UTC)


class FakeDatabaseError(Exception):
    """An error the fake database answered a statement with."""


class FakeRefused(FakeDatabaseError):
    """The fake database refused a row (as a CHECK or a unique constraint would)."""


class FakeConnectionLost(Exception):
    """The statement's connection went away (not an answer from the database)."""


def new_intent(
    client_id: UUID | None = None, *, key: str | None = None, decimals: int = 6
) -> NewIntent:
    return NewIntent(
        client_id=client_id or uuid4(),
        idempotency_key=key,
        request_hash="h",
        sender=None,
        initial_amount="5",
        amount_symbol=None,
        source_chain="BASE_TESTNET",
        destination_chain="ARBITRUM_TESTNET",
        token_in="0x" + "1" * 40,
        token_out="0x" + "2" * 40,
        token_out_decimals=decimals,
        asset_token_symbol="USDC",
        asset_token_decimals=6,
        total_due=5_000_000,
        fees_in_asset=0,
        app_fee_in_asset=0,
        amount_out=5_000_000,
        fees_in_usd=Decimal(0),
        app_fee_in_usd=Decimal(0),
        total_in_usd=Decimal(5),
        slippage=Decimal(0),
        recipient="0x" + "3" * 40,
        refund_address="0x" + "3" * 40,
        coordinator="0x" + "4" * 40,
        bridger="0x" + "5" * 40,
        metadata={},
        expires_at=NOW,
    )


class Keys:
    """Addresses by index, in mixed case (the writer stores them lowercase)."""

    def address(self, index: int) -> str:
        return f"0x{index:040X}"


_ROW_FIELDS = {f.name for f in fields(IntentRow)}


def _row(item: AddressedIntent, row_id: int) -> IntentRow:
    planned = {f.name: getattr(item.new, f.name) for f in fields(NewIntent)}
    return IntentRow(
        **{name: value for name, value in planned.items() if name in _ROW_FIELDS},
        id=row_id,
        address_index=item.address_index,
        intent_address=item.intent_address,
        relayer="",
        bridge_extra_data="0x",
        status=IntentStatus.PENDING,
        funding_status=FundingStatus.NONE,
        received=0,
        tx_hash=None,
        needs_relay=False,
        event_sequence=0,
        version=0,
        created_at=NOW,
        updated_at=NOW,
    )


@dataclass
class FakeIntentStore:
    delay: float = 0.0
    gate: asyncio.Event | None = None
    """When given, every insert statement waits for it (after `delay`)."""
    refuse: Callable[[NewIntent], bool] = lambda new: new.token_out_decimals > 36
    """Rows the database refuses (like the CHECK on ``token_out_decimals``)."""
    lose_connection_after: int | None = None
    """Statements answered before the connection is lost for good (None: never)."""
    no_connection: bool = False
    """Every session waits for a connection that never comes free."""
    rows: dict[int, IntentRow] = field(default_factory=dict)
    """Written intents, by id."""
    keys: dict[tuple[UUID, str], tuple[int, str]] = field(default_factory=dict)
    statements: list[list[int]] = field(default_factory=list)
    """The address indexes of every insert statement run, in order (failed ones too)."""
    open_sessions: int = 0
    most_sessions: int = 0
    _next_index: int = 1

    @asynccontextmanager
    async def session(self, *, within: float | None = None) -> AsyncIterator[FakeSession]:
        await asyncio.sleep(0)
        if self.no_connection:
            try:
                await asyncio.wait_for(asyncio.Event().wait(), within)
            except TimeoutError:
                raise NoConnection(f"no connection within {within} s") from None
        self.open_sessions += 1
        self.most_sessions = max(self.most_sessions, self.open_sessions)
        try:
            yield FakeSession(self)
        finally:
            self.open_sessions -= 1

    async def find_by_idempotency_key(
        self, client_id: UUID, key: str
    ) -> tuple[IntentRow, str] | None:
        found = self.keys.get((client_id, key))
        return None if found is None else (self.rows[found[0]], found[1])

    def refuses_row(self, error: Exception) -> bool:
        return isinstance(error, FakeRefused)

    def answered_with_error(self, error: Exception) -> bool:
        return isinstance(error, FakeDatabaseError)

    def take(self, count: int) -> list[int]:
        taken = list(range(self._next_index, self._next_index + count))
        self._next_index += count
        return taken

    async def insert(self, items: Sequence[AddressedIntent]) -> dict[int, IntentRow]:
        self.statements.append([item.address_index for item in items])
        await asyncio.sleep(self.delay)
        if self.gate is not None:
            await self.gate.wait()
        if self.lose_connection_after is not None:
            if self.lose_connection_after == 0:
                raise FakeConnectionLost("connection lost")
            self.lose_connection_after -= 1
        if any(self.refuse(item.new) for item in items):
            raise FakeRefused("new row violates a check constraint")
        written: dict[int, IntentRow] = {}
        for item in items:  # all or nothing: nothing was refused
            new = item.new
            if new.idempotency_key is not None:
                if (new.client_id, new.idempotency_key) in self.keys:
                    continue
                self.keys[new.client_id, new.idempotency_key] = (
                    len(self.rows) + 1,
                    new.request_hash,
                )
            row = _row(item, len(self.rows) + 1)
            self.rows[row.id] = row
            written[item.address_index] = row
        return written

    async def insert_within(
        self, items: Sequence[AddressedIntent], max_pending: int
    ) -> tuple[dict[int, IntentRow], frozenset[int]]:
        """As PostgreSQL: count each client's PENDING rows and insert, with nothing in
        between (the fake has one connection's worth of concurrency: none)."""
        rows = self.rows.values()
        pending = Counter(r.client_id for r in rows if r.status is IntentStatus.PENDING)
        over = refused([item.new.client_id for item in items], pending, max_pending)
        fitting = [item for item, no in zip(items, over, strict=True) if not no]
        written = await self.insert(fitting) if fitting else {}
        return written, frozenset(i.address_index for i, no in zip(items, over, strict=True) if no)


@dataclass
class FakeSession:
    store: FakeIntentStore

    async def take_indexes(self, count: int) -> list[int]:
        return self.store.take(count)

    async def insert(self, items: Sequence[AddressedIntent]) -> dict[int, IntentRow]:
        return await self.store.insert(items)

    async def insert_within(
        self, items: Sequence[AddressedIntent], max_pending: int
    ) -> tuple[dict[int, IntentRow], frozenset[int]]:
        return await self.store.insert_within(items, max_pending)
