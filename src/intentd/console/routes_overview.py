"""``/console/api/overview``: the last 30 days' figures, the live counts, the payments
needing attention (with why each waits) and how many approvals are pending.

Guarantees: only the signed-in user's client, in the screen's mode; the reads run at
once, each on a connection of its own, within the overview's share of the pool
(``console.pool_share``), so a busy overview never takes the API's connections; at most
:data:`ATTENTION_LIMIT` payments needing attention, a live one counting as stuck once
unchanged for :data:`STUCK_AFTER`.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from eth_utils import to_checksum_address
from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from intentd.access.roles import Permission
from intentd.adapters.postgres import console_overview, console_reads, refund_approvals
from intentd.api.context import Services, json_response
from intentd.console.auth import ConsoleUser, Require
from intentd.console.payment_views import (
    facts_of,
    render_overview,
    render_whys,
)
from intentd.console.pool_share import overview_connection
from intentd.console.waiting import why_waiting
from intentd.console.web import CONSOLE_API, ModeParam, mode_chains
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount

__all__ = ["ATTENTION_LIMIT", "STUCK_AFTER", "router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.PAYMENTS_READ))]
STUCK_AFTER = timedelta(minutes=5)
ATTENTION_LIMIT = 20


@router.get("/overview")
async def overview(request: Request, user: Reader, mode: ModeParam = "test") -> Response:
    """Its three reads (the day totals, the live counts, the payments needing attention)
    run at once, each on a connection of its own, within the overview's share of the
    pool (``console.pool_share``)."""
    services = Services.of(request)
    settings = services.settings
    now = datetime.now(UTC)
    chains = mode_chains(settings, mode)
    client = user.session.client_id

    async def days() -> list[console_overview.DayTotal]:
        async with overview_connection(request) as conn:
            return await console_overview.day_totals(
                conn, client, chains, since=now.date() - timedelta(days=29), now=now
            )

    async def live() -> dict[str, int]:
        async with overview_connection(request) as conn:
            return await console_overview.live_counts(conn, client, chains)

    async def attention() -> list[dict[str, Any]]:
        grace = timedelta(seconds=settings.intents.expiry_grace_seconds)
        async with overview_connection(request) as conn:
            stuck = await console_overview.attention(
                conn,
                client,
                chains,
                now=now,
                stuck_after=STUCK_AFTER,
                grace=grace,
                limit=ATTENTION_LIMIT,
            )
            return await _with_reasons(services, conn, stuck, now)

    async def attention_and_approvals() -> tuple[list[dict[str, Any]], int]:
        found = await attention()
        async with overview_connection(request) as conn:
            return found, await refund_approvals.pending_count(conn, client, mode, now)

    totals, counts, (stuck, pending) = await asyncio.gather(
        days(), live(), attention_and_approvals()
    )
    body = render_overview(totals, counts, now.date())
    body["attention"] = stuck
    body["approvals_pending"] = pending
    return json_response(body)


async def _with_reasons(
    services: Services, conn: Any, rows: list[IntentRow], now: datetime
) -> list[dict[str, Any]]:
    ids = [r.id for r in rows]
    actions = await console_reads.actions_of(conn, ids)
    deposits = await console_reads.deposits_of(conn, ids)
    chains = await console_reads.chain_states(conn, list(services.settings.chains))
    approvals = await refund_approvals.pending_for_intents(conn, ids)
    out = []
    for row in rows:
        facts = facts_of(
            services.settings,
            row,
            actions[row.id],
            deposits[row.id],
            chains,
            approval=approvals.get(row.id),
            now=now,
        )
        out.append(
            {
                "id": row.id,
                "intent_address": to_checksum_address(row.intent_address),
                "status": row.status.value,
                "amount": format_amount(row.total_due, row.asset_token_decimals),
                "symbol": row.asset_token_symbol,
                "source_chain": row.source_chain,
                "updated_at": row.updated_at.isoformat().replace("+00:00", "Z"),
                "reasons": render_whys(why_waiting(facts)),
            }
        )
    return out
