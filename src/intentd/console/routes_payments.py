"""``/console/api/payments``: the list, a payment's detail, cancel and refund.

Lists and reads show the signed-in user's client, in the screen's mode only (another
client's intent, or one of the other mode, is a 404). Cancel and refund run
:func:`intentd.merchant.refunds.request` as the user, so a refund above the client's
threshold waits for approval exactly as a key's does (``routes_approvals``); the body
names the amount the user was shown, and a different amount held now is a 409
``amount_changed`` (nothing done).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any

from eth_utils import to_checksum_address
from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from intentd.access.approvals import needs_approval, refund_value_usd
from intentd.access.roles import Permission
from intentd.adapters.postgres import (
    console_reads,
    event_log,
    intent_list,
    intent_store,
    refund_approvals,
)
from intentd.adapters.postgres.intent_list import IntentFilter
from intentd.api.context import Services, json_response, read_body
from intentd.api.intents.commands import refused_problem
from intentd.api.intents.list_params import decode_list_cursor, encode_list_cursor, metadata_filter
from intentd.api.intents.refund_approvals import refund_policy, render_approval
from intentd.api.paging import parse_time
from intentd.api.problems import ApiProblem
from intentd.console.auth import ConsoleUser, Require
from intentd.console.payment_views import (
    explorer,
    facts_of,
    render_actions,
    render_deliveries,
    render_deposits,
    render_whys,
)
from intentd.console.waiting import why_waiting
from intentd.console.web import CONSOLE_API, ModeParam, mode_chains
from intentd.contract.record import IntentRow, render_record
from intentd.domain.amounts import format_amount
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.intents.validation import check_address
from intentd.lifecycle import commands
from intentd.merchant import refunds

__all__ = ["router"]

router = APIRouter(prefix=CONSOLE_API, include_in_schema=False)
Reader = Annotated[ConsoleUser, Depends(Require(Permission.PAYMENTS_READ))]
Canceller = Annotated[ConsoleUser, Depends(Require(Permission.PAYMENTS_CANCEL))]
Refunder = Annotated[ConsoleUser, Depends(Require(Permission.PAYMENTS_REFUND))]
IntentId = Annotated[int, Path(ge=1, le=2**63 - 1)]
_Text = Annotated[str | None, Query(min_length=1, max_length=200)]


def _now() -> datetime:
    return datetime.now(UTC)


def _chain_in_mode(services: Services, mode: str, name: str | None, field: str) -> str | None:
    if name is None:
        return None
    chains = mode_chains(services.settings, mode)
    if name.upper() not in chains:
        raise ApiProblem(
            422, "unknown_chain", f"{field} {name!r} is not a {mode} chain", field=field
        )
    return name.upper()


async def _intent(services: Services, user: ConsoleUser, mode: str, intent_id: int) -> IntentRow:
    """The user's client's intent of this mode; 404 otherwise."""
    async with services.connection() as conn:
        row = await intent_store.get_by_id(conn, intent_id)
    if (
        row is None
        or row.client_id != user.session.client_id
        or row.source_chain not in mode_chains(services.settings, mode)
    ):
        raise ApiProblem(404, "intent_not_found", f"no {mode} intent {intent_id} for this client")
    return row


@router.get("/payments")
async def payments(
    request: Request,
    user: Reader,
    mode: ModeParam = "test",
    *,
    status: Annotated[IntentStatus | None, Query()] = None,
    funding_status: Annotated[FundingStatus | None, Query()] = None,
    source_chain: Annotated[str | None, Query(max_length=64)] = None,
    destination_chain: Annotated[str | None, Query(max_length=64)] = None,
    sender: Annotated[str | None, Query(max_length=64)] = None,
    recipient: Annotated[str | None, Query(max_length=64)] = None,
    session_id: Annotated[str | None, Query(max_length=64)] = None,
    metadata_key: _Text = None,
    metadata_value: Annotated[str | None, Query(max_length=500)] = None,
    created_after: Annotated[str | None, Query(max_length=64)] = None,
    created_before: Annotated[str | None, Query(max_length=64)] = None,
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """Every filter of ``GET /api/v1/intents``, the same keyset pages; ``head_cursor``
    (the first page's newest intent) polled with ``order=asc`` gives newer intents."""
    services = Services.of(request)
    source = _chain_in_mode(services, mode, source_chain, "source_chain")
    where = IntentFilter(
        client_id=user.session.client_id,
        source_chains=[source] if source is not None else mode_chains(services.settings, mode),
        status=status.value if status is not None else None,
        funding_status=funding_status.value if funding_status is not None else None,
        destination_chain=_chain_in_mode(services, mode, destination_chain, "destination_chain"),
        sender=check_address(sender, "sender", required=False),
        recipient=check_address(recipient, "recipient", required=False),
        session_id=session_id,
        metadata=metadata_filter(metadata_key, metadata_value),
        created_after=parse_time(created_after, "created_after"),
        created_before=parse_time(created_before, "created_before"),
    )
    after = decode_list_cursor(cursor)
    async with services.connection() as conn:
        found = await intent_list.page(
            conn, where, after=after, descending=order == "desc", limit=limit + 1
        )
    page = found[:limit]
    last = page[-1][0] if page else after
    head = page[0][0] if page and order == "desc" and cursor is None else None
    return json_response(
        {
            "data": [render_record(row) for _, row in page],
            "has_more": len(found) > limit,
            "next_cursor": encode_list_cursor(last) if last is not None else None,
            "head_cursor": encode_list_cursor(head) if head is not None else None,
        }
    )


def _command_offer(
    services: Services, row: IntentRow, command: commands.Command, threshold: Any
) -> dict[str, Any]:
    allowed = row.status is (
        IntentStatus.PENDING if command is commands.Command.CANCEL else IntentStatus.FUNDED
    )
    held = refunds.held(row)
    value = refund_value_usd(
        held,
        total_due=row.total_due,
        total_in_usd=row.total_in_usd,
        unit_price=refund_policy(services).unit_price(row),
        decimals=row.asset_token_decimals,
    )
    return {
        "allowed": allowed,
        "refund_amount": format_amount(held, row.asset_token_decimals),
        "refund_base_units": str(held),
        "symbol": row.asset_token_symbol,
        "refund_to": render_record(row)["refund_address"],
        "usd": str(value.quantize(Decimal("0.01"))) if value is not None else None,
        "needs_approval": allowed and held > 0 and needs_approval(threshold, value),
    }


@router.get("/payments/{intent_id}")
async def payment(
    request: Request, user: Reader, intent_id: IntentId, mode: ModeParam = "test"
) -> Response:
    services = Services.of(request)
    settings = services.settings
    row = await _intent(services, user, mode, intent_id)
    now = _now()
    async with services.connection() as conn:
        events = await event_log.timeline(
            conn, user.session.client_id, row.id, after_sequence=0, limit=500
        )
        actions = (await console_reads.actions_of(conn, [row.id]))[row.id]
        deposits = (await console_reads.deposits_of(conn, [row.id]))[row.id]
        deliveries = await console_reads.deliveries_of(conn, user.session.client_id, row.id)
        chains = await console_reads.chain_states(
            conn, sorted({row.source_chain, row.destination_chain})
        )
        await refund_approvals.expire_stale(conn, now, intent_id=row.id)
        approval = await refund_approvals.pending_for_intent(conn, row.id)
        own, threshold = await refund_approvals.threshold(conn, row.client_id)
    if not own:
        threshold = settings.console.refund_approval_above_usd
    facts = facts_of(settings, row, actions, deposits, chains, approval=approval, now=now)
    body = {
        "record": render_record(row),
        "waiting": render_whys(why_waiting(facts)),
        "events": [e.body for e in events],
        "deposits": render_deposits(settings, deposits),
        "actions": render_actions(settings, actions),
        "deliveries": render_deliveries(deliveries),
        "approval": render_approval(approval) if approval is not None else None,
        "commands": {
            command.value: _command_offer(services, row, command, threshold)
            for command in commands.Command
        },
        "explorer": _explorers(services, row),
    }
    return json_response(body)


def _explorers(services: Services, row: IntentRow) -> dict[str, str | None]:
    """Explorer links of the record's addresses and prefill transaction, by field."""
    settings = services.settings

    def address(chain: str, value: str | None) -> str | None:
        if not value:
            return None
        return explorer(settings, chain, "address", to_checksum_address(value))

    return {
        "intent_address": address(row.source_chain, row.intent_address),
        "refund_address": address(row.source_chain, row.refund_address),
        "sender": address(row.source_chain, row.sender),
        "recipient": address(row.destination_chain, row.recipient),
        "tx_hash": (
            explorer(settings, row.destination_chain, "tx", row.tx_hash) if row.tx_hash else None
        ),
    }


class CommandBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    refund_base_units: str = Field(
        pattern=r"^[0-9]{1,78}$", description="the refund amount the user was shown"
    )


async def _command(
    request: Request, user: ConsoleUser, mode: str, intent_id: int, command: commands.Command
) -> Response:
    services = Services.of(request)
    body = await read_body(request, CommandBody)
    row = await _intent(services, user, mode, intent_id)
    if refunds.held(row) != int(body.refund_base_units):
        raise ApiProblem(
            409,
            "amount_changed",
            f"the intent now holds {format_amount(refunds.held(row), row.asset_token_decimals)}"
            f" {row.asset_token_symbol}; look again before confirming",
        )
    async with services.connection() as conn:
        try:
            outcome = await refunds.request(
                conn,
                services.intent_commands,
                refund_policy(services),
                user.actor(),
                row.id,
                command=command,
                mode=mode,
                now=_now(),
            )
        except commands.CommandRefused as refused:
            raise refused_problem(command, row.intent_address, refused) from None
    if isinstance(outcome, refunds.Waiting):
        return json_response({"approval": render_approval(outcome.approval)}, 202)
    return json_response({"record": render_record(outcome.answer.row)})


@router.post("/payments/{intent_id}/cancel")
async def cancel(
    request: Request, user: Canceller, intent_id: IntentId, mode: ModeParam = "test"
) -> Response:
    return await _command(request, user, mode, intent_id, commands.Command.CANCEL)


@router.post("/payments/{intent_id}/refund")
async def refund(
    request: Request, user: Refunder, intent_id: IntentId, mode: ModeParam = "test"
) -> Response:
    return await _command(request, user, mode, intent_id, commands.Command.REFUND)
