"""Cancel and refund, with approval above the client's threshold (one transaction each).

:func:`request` is what ``POST /intents/{address}/cancel|refund`` and the console's
buttons run. Under the intent's row lock it decides whether the command needs a second
person (:mod:`intentd.access.approvals`): if so it records a pending approval and
refunds nothing; otherwise it runs the lifecycle's command
(:mod:`intentd.lifecycle.commands`) in the same transaction. :func:`approve` runs the
command of a pending approval, by another user, in the transaction that marks the
approval executed. Every outcome (done, waiting, refused, denied) is written to the
audit log in the transaction of the change, so a crash anywhere leaves either the
change and its record, or neither; running the call again then decides afresh from
the stored state, which cannot refund twice (the command's own guarantee, and an
approval is executed only while pending, under its row lock).

Crash points (``intentd.faults``, tests only): ``approval.before_commit``, with the
refund decided and nothing committed; ``approval.after_commit``, committed and not
yet answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import structlog

from intentd.access.actors import Actor
from intentd.access.approvals import (
    ApprovalRefusal,
    ApprovalStatus,
    PendingApproval,
    approval_refusal,
    needs_approval,
    refund_value_usd,
)
from intentd.adapters import audit_log, intent_store, refund_approvals
from intentd.adapters.audit_log import AuditEntry
from intentd.adapters.postgres import Connection
from intentd.adapters.refund_approvals import Approval
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount
from intentd.domain.status import IntentStatus
from intentd.faults import crash_point
from intentd.lifecycle import commands
from intentd.merchant.intent_commands import IntentCommands

__all__ = [
    "ApprovalDenied",
    "Done",
    "RefundPolicy",
    "Waiting",
    "approve",
    "reject",
    "request",
]

log = structlog.get_logger()

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


class ApprovalDenied(Exception):
    """The approval cannot be executed (or rejected) by this user now: ``code`` says why
    (``approval_not_found`` or an :class:`ApprovalRefusal`)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def held(row: IntentRow) -> int:
    """What a cancel or refund would give back: the credited ``tokenIn`` not yet refunded."""
    return row.received - row.refunded


def _amounts(row: IntentRow, amount: int) -> dict[str, Any]:
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
    :class:`~intentd.lifecycle.commands.Refused` (recorded in the audit log first)."""
    refused: commands.Refused | None = None
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
            detail = {**_amounts(row, amount), "usd": value, "approval_id": str(approval.id)}
            await audit_log.record(
                conn, actor, AuditEntry(action, "intent", str(row.id), "pending", mode, detail)
            )
            return Waiting(approval, created=True)
        try:
            answer = await intents.run(conn, command, row.id, now=now)
        except commands.Refused as exc:
            refused = exc
            detail = {**_amounts(row, amount), "why": exc.why, "status": exc.status.value}
            entry = AuditEntry(action, "intent", str(row.id), "refused", mode, detail)
        else:
            outcome = Done(answer)
            given = answer.row.refunded - row.refunded
            result = "ok" if answer.applied else "repeat"
            entry = AuditEntry(action, "intent", str(row.id), result, mode, _amounts(row, given))
        await audit_log.record(conn, actor, entry)
    if refused is not None:
        raise refused
    assert outcome is not None
    return outcome


async def approve(
    conn: Connection, intents: IntentCommands, actor: Actor, approval_id: UUID, *, now: datetime
) -> Done:
    """Execute a pending approval as ``actor`` (a user who may approve); raises
    :class:`ApprovalDenied` or :class:`~intentd.lifecycle.commands.Refused` (the intent no
    longer allows the command: the approval is marked failed)."""
    failure: Exception | None = None
    done: Done | None = None
    async with conn.transaction():
        approval = await refund_approvals.lock(conn, approval_id, actor.client_id)
        if approval is None:
            raise ApprovalDenied("approval_not_found", f"no refund approval {approval_id}")
        row = await intent_store.lock_by_id(conn, approval.intent_id)
        assert row is not None  # intents are never deleted
        command = commands.Command(approval.command)
        refusal = approval_refusal(
            PendingApproval(
                approval.status, approval.expires_at, approval.requested_by_id, approval.amount
            ),
            approver_id=actor.id,
            held_now=held(row),
            now=now,
        )
        detail: dict[str, Any] = {
            **_amounts(row, approval.amount),
            "approval_id": str(approval.id),
            "command": command.value,
            "requested_by": approval.requested_by_label,
        }
        entry: AuditEntry
        if refusal is not None:
            failure = ApprovalDenied(refusal.value, _refusal_text(refusal, approval, row))
            if refusal is ApprovalRefusal.EXPIRED:
                await refund_approvals.decide(
                    conn, approval.id, ApprovalStatus.EXPIRED, by=None, outcome="expired"
                )
            elif refusal is ApprovalRefusal.AMOUNT_CHANGED:
                await refund_approvals.decide(
                    conn,
                    approval.id,
                    ApprovalStatus.FAILED,
                    by=(actor.id, actor.label),
                    outcome=str(failure),
                )
            entry = AuditEntry(
                "approval.approve",
                "approval",
                str(approval.id),
                "denied",
                approval.mode,
                {**detail, "why": refusal.value},
            )
        else:
            try:
                answer = await intents.run(conn, command, row.id, now=now)
            except commands.Refused as exc:
                failure = exc
                await refund_approvals.decide(
                    conn,
                    approval.id,
                    ApprovalStatus.FAILED,
                    by=(actor.id, actor.label),
                    outcome=str(exc),
                )
                entry = AuditEntry(
                    "approval.approve",
                    "approval",
                    str(approval.id),
                    "refused",
                    approval.mode,
                    {**detail, "why": exc.why},
                )
            else:
                given = answer.row.refunded - row.refunded
                await refund_approvals.decide(
                    conn,
                    approval.id,
                    ApprovalStatus.EXECUTED,
                    by=(actor.id, actor.label),
                    outcome=f"{command.done}: {format_amount(given, row.asset_token_decimals)}"
                    f" {row.asset_token_symbol} back to the payer",
                )
                entry = AuditEntry(
                    "approval.approve",
                    "approval",
                    str(approval.id),
                    "ok",
                    approval.mode,
                    {**detail, "refunded": format_amount(given, row.asset_token_decimals)},
                )
                executed = await refund_approvals.get(conn, approval.id)
                done = Done(answer, executed)
        await audit_log.record(conn, actor, entry)
        if done is not None:
            crash_point("approval.before_commit")
    if done is not None:
        crash_point("approval.after_commit")
        log.info("refund approval executed", approval_id=str(approval_id), intent_id=row.id)
        return done
    assert failure is not None
    raise failure


async def reject(conn: Connection, actor: Actor, approval_id: UUID, *, now: datetime) -> Approval:
    """Reject (or, by its requester, withdraw) a pending approval; nothing is refunded."""
    async with conn.transaction():
        approval = await refund_approvals.lock(conn, approval_id, actor.client_id)
        if approval is None:
            raise ApprovalDenied("approval_not_found", f"no refund approval {approval_id}")
        if approval.status is not ApprovalStatus.PENDING or now >= approval.expires_at:
            raise ApprovalDenied(
                ApprovalRefusal.NOT_PENDING.value,
                f"the approval is {approval.status.value}; only a pending one can be rejected",
            )
        await refund_approvals.decide(
            conn, approval.id, ApprovalStatus.REJECTED, by=(actor.id, actor.label), outcome=""
        )
        await audit_log.record(
            conn,
            actor,
            AuditEntry(
                "approval.reject",
                "approval",
                str(approval.id),
                "ok",
                approval.mode,
                {"intent_id": approval.intent_id, "command": approval.command},
            ),
        )
        found = await refund_approvals.get(conn, approval.id)
    assert found is not None
    return found


def _refusal_text(refusal: ApprovalRefusal, approval: Approval, row: IntentRow) -> str:
    match refusal:
        case ApprovalRefusal.NOT_PENDING:
            return f"the approval is {approval.status.value}; only a pending one can be approved"
        case ApprovalRefusal.EXPIRED:
            return "the approval expired; ask for the refund again"
        case ApprovalRefusal.OWN_REQUEST:
            return "a refund is approved by someone other than the person who asked for it"
        case ApprovalRefusal.AMOUNT_CHANGED:
            now = format_amount(held(row), row.asset_token_decimals)
            then = format_amount(approval.amount, row.asset_token_decimals)
            return (
                f"the intent now holds {now} {row.asset_token_symbol}, more than the"
                f" {then} approved; ask for the refund again"
            )
    raise AssertionError(refusal)
