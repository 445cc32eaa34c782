"""Refund approvals on the API: the policy the API's commands run under, an approval's
JSON, and ``GET /api/v1/refund-approvals/{approval_id}`` (scope ``refunds``).

A key's refund (or cancel that refunds) above its client's threshold answers 202 with
the pending approval (``merchant.refunds``); a user with ``refunds.approve`` decides
it in the console, and the key follows it here (or by the intent's events).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal
from uuid import UUID

from eth_utils import to_checksum_address
from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from intentd.access.actors import Actor
from intentd.adapters.postgres import refund_approvals
from intentd.adapters.postgres.refund_approvals import Approval
from intentd.api.callers.auth import Caller
from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response
from intentd.api.problems import ApiProblem
from intentd.contract.mode import Mode
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount
from intentd.merchant.refunds import RefundPolicy
from intentd.pricing import PriceRefused, token_price

__all__ = ["ApprovalRecord", "key_actor", "refund_policy", "render_approval", "router"]

router = APIRouter(prefix=API_PREFIX, tags=["intents"])


class ApprovalRecord(BaseModel):
    """A refund (or a cancel that refunds) waiting for, or decided by, a second person."""

    id: str
    status: Literal["pending", "executed", "rejected", "expired", "failed"]
    command: Literal["cancel", "refund"]
    intent_id: int
    intent_address: str
    mode: Mode
    amount: str = Field(description="what the intent held when it was asked, in whole units")
    asset_token_symbol: str
    amount_usd: str | None = Field(description="its USD value at the intent's quote, if known")
    requested_by: str = Field(description="the key's prefix or the user's email")
    requested_at: str
    expires_at: str
    decided_by: str | None
    decided_at: str | None
    outcome: str = Field(description="what the decision did (failed: why nothing was refunded)")


class ApprovalWaiting(BaseModel):
    approval: ApprovalRecord


def _time(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def render_approval(approval: Approval) -> dict[str, Any]:
    return {
        "id": str(approval.id),
        "status": approval.status.value,
        "command": approval.command,
        "intent_id": approval.intent_id,
        "intent_address": to_checksum_address(approval.intent_address),
        "mode": approval.mode,
        "amount": format_amount(approval.amount, approval.asset_token_decimals),
        "asset_token_symbol": approval.asset_token_symbol,
        "amount_usd": (
            str(approval.amount_usd.quantize(Decimal("0.01")))
            if approval.amount_usd is not None
            else None
        ),
        "requested_by": approval.requested_by_label,
        "requested_at": _time(approval.requested_at),
        "expires_at": _time(approval.expires_at),
        "decided_by": approval.decided_by_label,
        "decided_at": _time(approval.decided_at),
        "outcome": approval.outcome,
    }


def refund_policy(services: Services) -> RefundPolicy:
    settings = services.settings

    def unit_price(row: IntentRow) -> Decimal | None:
        """The token's USD price now; None when there is none or it is refused (the
        refund then waits for approval: ``access.approvals``)."""
        chain = settings.chains.get(row.source_chain)
        token = chain.token(row.token_in) if chain is not None else None
        if chain is None or token is None:
            return None
        try:
            price = token_price(
                token,
                chain.network,
                services.prices,
                peg_tolerance_bps=settings.pricing.peg_tolerance_bps,
            )
        except PriceRefused:
            return None
        return price.usd if price is not None else None

    return RefundPolicy(
        default_threshold=settings.console.refund_approval_above_usd,
        approval_ttl=timedelta(hours=settings.console.approval_ttl_hours),
        unit_price=unit_price,
    )


def key_actor(services: Services, caller: Caller, request: Request) -> Actor:
    return Actor(
        "key",
        str(caller.key.id),
        caller.key.prefix,
        caller.client_id,
        services.auth.source_of(request.scope),
    )


@router.get(
    "/refund-approvals/{approval_id}",
    response_model=ApprovalRecord,
    responses=errors(404, 422),
    summary="Read a refund approval (a 202 of cancel or refund names it)",
)
async def read_approval(
    request: Request,
    caller: ApiCaller,
    approval_id: Annotated[UUID, Path(description="the approval's id")],
) -> Response:
    services = Services.of(request)
    async with services.connection() as conn:
        await refund_approvals.expire_stale(conn, services.now(), client_id=caller.client_id)
        found = await refund_approvals.get(conn, approval_id, caller.client_id)
    chain = services.settings.chains.get(found.source_chain) if found is not None else None
    if found is None or chain is None or not caller.may_use(chain):
        raise ApiProblem(404, "approval_not_found", f"no refund approval {approval_id}")
    return json_response(render_approval(found))
