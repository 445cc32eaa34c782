"""How a report is answered: a streamed body that owns its database connection, and the
documented shapes (OpenAPI) of the reconciliation's JSON.

:func:`open_stream` takes a report slot of the process and a pooled connection, opens
the report's snapshot, and computes the first chunk *before* answering: a refusal (the
process's reports all busy, no connection) or a failure of the first query is answered
as a problem document, never as a 200 with a broken body. Then :class:`ReportStream`
sends the rest; whatever happens to it (done, the client gone, an error, the
:data:`DEADLINE`), the transaction ends, the connection and the slot are given back. A
failure after the first chunk cannot change the status any more: the connection is
closed without the final chunk, which every HTTP client reports as a truncated body
(never as a complete file).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

from fastapi import Request
from pydantic import BaseModel, Field
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from intentd.adapters.postgres.report_queries import snapshot
from intentd.api.context import Services
from intentd.api.problems import ApiProblem
from intentd.reports.ports import ReportReader

__all__ = [
    "DEADLINE",
    "ReconciliationReport",
    "ReportStream",
    "open_stream",
]

DEADLINE = 900.0
"""Seconds a report may stream (a million rows take well under a minute; a client that
reads slower holds a connection and a database snapshot, so it is cut off)."""
RETRY_AFTER = "5"


class ReportStream(StreamingResponse):
    """A streamed report (CSV unless told otherwise) that releases what it holds."""

    media_type = "text/csv"

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        resources: AsyncExitStack,
        *,
        filename: str,
        media_type: str = "text/csv",
    ) -> None:
        super().__init__(
            chunks,
            media_type=media_type,
            headers={
                "Content-Disposition": f'attachment; filename="{filename}"',
                "Cache-Control": "no-store",
            },
        )
        self._resources = resources

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._resources:
            async with asyncio.timeout(DEADLINE):
                await super().__call__(scope, receive, send)


class _Slots:
    """How many reports this process streams at once: each holds a pooled connection for
    its whole length, so at most a quarter of the pool (at least one)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy = 0


def _take_slot(request: Request, services: Services) -> _Slots:
    slots: _Slots | None = getattr(request.app.state, "report_slots", None)
    if slots is None:
        slots = _Slots(max(1, services.settings.database.max_pool // 4))
        request.app.state.report_slots = slots
    if slots.busy >= slots.limit:
        raise ApiProblem(
            503,
            "reports_busy",
            f"this server is streaming {slots.limit} reports already; retry after"
            " Retry-After seconds",
            headers={"Retry-After": RETRY_AFTER},
        )
    slots.busy += 1
    return slots


async def open_stream(
    request: Request,
    make: Callable[[ReportReader], AsyncIterator[bytes]],
    *,
    filename: str,
    media_type: str = "text/csv",
) -> ReportStream:
    """Answer the report ``make`` writes from a reader over one snapshot."""
    services = Services.of(request)
    slots = _take_slot(request, services)
    stack = AsyncExitStack()
    stack.callback(_release, slots)
    try:
        conn = await stack.enter_async_context(services.connection())
        await stack.enter_async_context(snapshot(conn))
        chunks = make(services.reports(conn))
        stack.push_async_callback(_close, chunks)
        first = await anext(chunks)
    except BaseException as exc:
        await stack.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    return ReportStream(_then(first, chunks), stack, filename=filename, media_type=media_type)


def _release(slots: _Slots) -> None:
    slots.busy -= 1


async def _close(chunks: AsyncIterator[bytes]) -> None:
    close = getattr(chunks, "aclose", None)
    if close is not None:
        await close()


async def _then(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield first
    async for chunk in rest:
        yield chunk


# --- the reconciliation's JSON, as documented ------------------------------------------


class MismatchItem(BaseModel):
    intent_id: int
    intent_address: str
    status: str = Field(description="the intent's status")
    check: str = Field(
        description="credited_total, credit_refunds, recipient, prefill, relayer_repayment,"
        " fee_sweep, retained, deposit_refund, transaction, address_balance or status"
    )
    chain: str
    token: str = Field(description="lowercase token address (the native coin: 0xeeee…)")
    expected: str | None = Field(description="base units, when the check compares amounts")
    found: str | None = Field(description="base units, when the check compares amounts")
    detail: str


class LedgerTotal(BaseModel):
    chain: str
    token: str
    symbol: str
    decimals: int | None
    received: str = Field(description="deposits of the users' money at the intent addresses")
    relayer_repaid: str
    fees_swept: str
    refunded: str
    gas_from_amount: str = Field(description="gas native sweeps paid out of their amount")
    retained: str = Field(description="dust left at the addresses by the rules")
    held: str = Field(description="decided transfers not yet confirmed")
    balanced: bool = Field(description="received = the six others summed")


class RecipientTotal(BaseModel):
    chain: str
    token: str
    symbol: str
    decimals: int | None
    due: str = Field(description="amount_out of the completed intents")
    got: str = Field(description="what their confirmed prefills paid the recipients")


class ReconciliationReport(BaseModel):
    """Every intent that ended in [from, to): its mismatches (none expected) and totals.
    Amounts are decimal strings of base units."""

    from_: str = Field(alias="from")
    to: str
    mismatches: list[MismatchItem]
    intents: int = Field(description="intents reconciled (COMPLETED, REFUNDED, EXPIRED, CANCELLED)")
    intents_with_mismatches: int
    by_status: dict[str, int]
    totals: list[LedgerTotal] = Field(description="per chain and token of the intent addresses")
    recipients: list[RecipientTotal] = Field(description="per destination chain and token")
    reconciled: bool = Field(description="true when no mismatch was found")


def csv_content(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/csv": {"schema": {"type": "string"}}}}
