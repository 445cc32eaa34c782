"""``POST /api/v1/intents/{intent_address}/cancel`` and ``.../refund``: the merchant's commands.

The API does not write intents: each command runs the lifecycle's service
(:mod:`intentd.lifecycle.commands`) on a connection of the API's pool, in one
database transaction under the intent's row lock, and answers what it decided (the
intent record, 200). A repeated command answers the same 200 with the current state;
a state that does not allow it answers 409 (``intent_not_cancellable`` or
``intent_not_refundable``) naming the state. Merchant API keys only (scope
``refunds``): a session token (the payment modal) cannot give an intent up.

Above the client's approval threshold (docs/console.md, Refund approval) nothing is
refunded yet: the answer is 202 with the pending approval, which a second person
decides in the console (``merchant.refunds``). Every outcome is in the audit log.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response
from intentd.api.intents.refund_approvals import (
    ApprovalWaiting,
    key_actor,
    refund_policy,
    render_approval,
)
from intentd.api.intents.routes import IntentAddress, load_intent
from intentd.api.problems import ApiProblem
from intentd.contract.mode import mode_of
from intentd.contract.record import IntentRecord, render_record
from intentd.lifecycle import commands
from intentd.merchant import refunds

__all__ = ["refused_problem", "router"]

router = APIRouter(prefix=API_PREFIX, tags=["intents"])

_CODES = {
    commands.Command.CANCEL: "intent_not_cancellable",
    commands.Command.REFUND: "intent_not_refundable",
}


def _responses(conflict: str) -> dict[int | str, dict[str, Any]]:
    answers = errors(403, 404, 409, 422)
    answers[409] = {**answers[409], "description": conflict}
    answers[202] = {
        "model": ApprovalWaiting,
        "description": "Above the client's approval threshold: nothing refunded yet, the"
        " approval waits for a second person (GET /refund-approvals/{id} follows it)",
    }
    return answers


async def _run(
    request: Request, caller: ApiCaller, intent_address: str, command: commands.Command
) -> Response:
    services = Services.of(request)
    row = await load_intent(services, caller, intent_address)
    mode = mode_of(services.settings.chains[row.source_chain].network)
    async with services.connection() as conn:
        try:
            outcome = await refunds.request(
                conn,
                services.intent_commands,
                refund_policy(services),
                key_actor(services, caller, request),
                row.id,
                command=command,
                mode=mode,
                now=services.now(),
            )
        except commands.CommandRefused as refused:
            raise refused_problem(command, row.intent_address, refused) from None
    if isinstance(outcome, refunds.Waiting):
        return json_response({"approval": render_approval(outcome.approval)}, 202)
    return json_response(render_record(outcome.answer.row))


def refused_problem(
    command: commands.Command, address: str, refused: commands.CommandRefused
) -> ApiProblem:
    """The 409 of a command the intent's state does not allow."""
    return ApiProblem(
        409, _CODES[command], f"intent {address} is {refused.status.value}: {refused.why}"
    )


@router.post(
    "/intents/{intent_address}/cancel",
    response_model=IntentRecord,
    responses=_responses(
        "intent_not_cancellable: only a PENDING intent can be cancelled (the detail names"
        " the intent's status)"
    ),
    summary="Cancel a PENDING intent; what it received is refunded",
    description=(
        "The intent takes no more payments (a later one is a late deposit, refunded)."
        " Nothing received (or less than the token's min_sweep): CANCELLED at once, with"
        " the event intent_cancelled. Otherwise REFUNDING: all of it goes back to"
        " refund_address, and intent_refunded (reason cancelled) ends it as REFUNDED."
        " Cancelling a cancelled intent again answers 200 with its current state."
    ),
)
async def cancel(request: Request, caller: ApiCaller, intent_address: IntentAddress) -> Response:
    return await _run(request, caller, intent_address, commands.Command.CANCEL)


@router.post(
    "/intents/{intent_address}/refund",
    response_model=IntentRecord,
    responses=_responses(
        "intent_not_refundable: only a FUNDED intent whose prefill has not been taken by"
        " the executor can be refunded (the detail names the intent's status)"
    ),
    summary="Refund a FUNDED intent whose prefill has not started",
    description=(
        "For an intent that is paid but stuck before its prefill: the prefill is"
        " withdrawn and everything the intent holds goes back to refund_address"
        " (REFUNDING; intent_refunded with reason merchant ends it as REFUNDED). Refused"
        " (409) once a prefill transaction may have been broadcast. Refunding a refunded"
        " intent again answers 200 with its current state."
    ),
)
async def refund(request: Request, caller: ApiCaller, intent_address: IntentAddress) -> Response:
    return await _run(request, caller, intent_address, commands.Command.REFUND)
