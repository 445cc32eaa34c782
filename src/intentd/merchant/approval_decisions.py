"""A pending refund approval decided by a second user: approved (the command runs) or
rejected (nothing is refunded).

Guarantees: :func:`approve` runs the command of a pending approval, by a user other
than the one who asked, in the transaction that marks the approval executed; an
approval is executed only while pending, under its row lock, and only while the intent
holds no more than was approved (else it fails: ask again), so it cannot refund twice.
Every outcome (done, denied, refused) is written to the audit log in the transaction of
the change.

Crash points (``intentd.faults``, tests only): ``approval.before_commit``, with the
refund decided and nothing committed; ``approval.after_commit``, committed and not
yet answered.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import structlog

from intentd.access.actors import Actor
from intentd.access.approvals import (
    ApprovalRefusal,
    ApprovalStatus,
    PendingApproval,
    approval_refusal,
)
from intentd.adapters.postgres import Connection, audit_log, intent_store, refund_approvals
from intentd.adapters.postgres.audit_log import AuditEntry
from intentd.adapters.postgres.refund_approvals import Approval
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount
from intentd.faults import crash_point
from intentd.lifecycle import commands
from intentd.merchant.intent_commands import IntentCommands
from intentd.merchant.refunds import Done, amounts_detail, held

__all__ = ["ApprovalDenied", "approve", "reject"]

log = structlog.get_logger()


class ApprovalDenied(Exception):
    """The approval cannot be executed (or rejected) by this user now: ``code`` says why
    (``approval_not_found`` or an :class:`ApprovalRefusal`)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


async def approve(
    conn: Connection, intents: IntentCommands, actor: Actor, approval_id: UUID, *, now: datetime
) -> Done:
    """Execute a pending approval as ``actor`` (a user who may approve); raises
    :class:`ApprovalDenied` or :class:`~intentd.lifecycle.commands.CommandRefused` (the intent no
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
            **amounts_detail(row, approval.amount),
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
            except commands.CommandRefused as exc:
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
