"""Cancel and refund, with approval above the client's threshold (one transaction each).

:func:`request` is what ``POST /intents/{address}/cancel|refund`` and the console's
buttons run. Under the intent's row lock it decides whether the command needs a second
person (:mod:`intentd.access.approvals`): if so it records a pending approval and
refunds nothing; otherwise it runs the lifecycle's command
(:mod:`intentd.lifecycle.commands`) in the same transaction. The second person's
decision is :mod:`intentd.merchant.approval_decisions`. Every outcome (done, waiting,
refused) is written to the audit log in the transaction of the change, so a crash
anywhere leaves either the change and its record, or neither; running the call again
then decides afresh from the stored state, which cannot refund twice (the command's
own guarantee).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from intentd.access.actors import Actor
from intentd.access.approvals import needs_approval, refund_value_usd
from intentd.adapters.postgres import Connection, audit_log, intent_store, refund_approvals
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.refund_approvals import Approval
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount
from intentd.domain.status import IntentStatus
from intentd.lifecycle import commands
from intentd.merchant.intent_commands import IntentCommands

__all__ = [
    "Done",
    "RefundPolicy",
    "Waiting",
    "amounts_detail",
    "held",
    "request",
]

_ACTION = {commands.Command.CANCEL: "intent.cancel", commands.Command.REFUND: "intent.refund"}
_NEEDS = {
    commands.Command.CANCEL: IntentStatus.PENDING,
    commands.Command.REFUND: IntentStatus.FUNDED,
}
"""The status in which a command refunds what the intent holds (else it is a repeat or
refused, and the command itself answers)."""


@dataclass(frozen=True, slots=True)
class RefundPolicy:
    """What the decision needs of the configuration."""

    default_threshold: Decimal | None
    """``console.refund_approval_above_usd``: for a client without its own policy."""
    approval_ttl: timedelta
    unit_price: Callable[[IntentRow], Decimal | None]
    """The USD price of one whole asset token of an intent (None: unknown)."""


@dataclass(frozen=True, slots=True)
class Done:
    """The command ran (or had run before: ``answer.applied`` is False)."""

    answer: commands.Answer
    approval: Approval | None = None
    """The approval it executed, if any."""


@dataclass(frozen=True, slots=True)
class Waiting:
    """The refund waits for a second user's approval; nothing was refunded."""

    approval: Approval
    created: bool
    """False: the intent already had this pending approval."""


def held(row: IntentRow) -> int:
    """What a cancel or refund would give back: the credited ``tokenIn`` not yet refunded."""
    return row.received - row.refunded


def amounts_detail(row: IntentRow, amount: int) -> dict[str, Any]:
    return {
        "amount": format_amount(amount, row.asset_token_decimals),
        "symbol": row.asset_token_symbol,
        "intent_address": row.intent_address,
    }


async def _threshold(conn: Connection, client_id: UUID, policy: RefundPolicy) -> Decimal | None:
    own, value = await refund_approvals.threshold(conn, client_id)
    return value if own else policy.default_threshold


async def request(
    conn: Connection,
    intents: IntentCommands,
    policy: RefundPolicy,
    actor: Actor,
    intent_id: int,
    *,
    command: commands.Command,
    mode: str,
    now: datetime,
) -> Done | Waiting:
    """Run ``command`` on the intent, or record it for approval; raises
    :class:`~intentd.lifecycle.commands.CommandRefused` (recorded in the audit log first)."""
    refused: commands.CommandRefused | None = None
    outcome: Done | Waiting | None = None
    action = _ACTION[command]
    async with conn.transaction():
        row = await intent_store.lock_by_id(conn, intent_id)
        if row is None:
            raise LookupError(f"intent {intent_id} does not exist")
        await refund_approvals.expire_stale(conn, now, intent_id=intent_id)
        pending = await refund_approvals.pending_for_intent(conn, intent_id)
        if pending is not None:
            return Waiting(pending, created=False)
        amount = held(row)
        value = refund_value_usd(
            amount,
            total_due=row.total_due,
            total_in_usd=row.total_in_usd,
            unit_price=policy.unit_price(row),
            decimals=row.asset_token_decimals,
        )
        if (
            row.status is _NEEDS[command]
            and amount > 0
            and needs_approval(await _threshold(conn, row.client_id, policy), value)
        ):
            approval = await refund_approvals.create(
                conn,
                client_id=row.client_id,
                intent_id=row.id,
                command=command.value,
                mode=mode,
                amount=amount,
                amount_usd=value,
                requested_by=(actor.kind, actor.id, actor.label),
                expires_at=now + policy.approval_ttl,
            )
            detail = {**amounts_detail(row, amount), "usd": value, "approval_id": str(approval.id)}
            await audit_log.record(
                conn, actor, AuditEntry(action, "intent", str(row.id), "pending", mode, detail)
            )
            return Waiting(approval, created=True)
        try:
            answer = await intents.run(conn, command, row.id, now=now)
        except commands.CommandRefused as exc:
            refused = exc
            detail = {**amounts_detail(row, amount), "why": exc.why, "status": exc.status.value}
            entry = AuditEntry(action, "intent", str(row.id), "refused", mode, detail)
        else:
            outcome = Done(answer)
            given = answer.row.refunded - row.refunded
            result = "ok" if answer.applied else "repeat"
            entry = AuditEntry(
                action, "intent", str(row.id), result, mode, amounts_detail(row, given)
            )
        await audit_log.record(conn, actor, entry)
    if refused is not None:
        raise refused
    assert outcome is not None
    return outcome
