"""The merchant's commands on an intent: cancel and refund (one transaction each).

Called by the API (``POST /intents/{address}/cancel`` and ``.../refund``) the way
trigger-processing calls :func:`intentd.lifecycle.crediting.credit`: the lifecycle
stays the only writer of intent state, the API gets a synchronous answer. Each
command locks the intent's row, decides with the domain
(:meth:`~intentd.domain.intent.Intent.cancel`,
:meth:`~intentd.domain.intent.Intent.refund_on_request`) and saves the intent
(compare-and-set on its version), the actions it decided and its events, all in one
database transaction: a crash before the commit leaves nothing, and running the
command again then decides afresh from the stored state (tests/unit/lifecycle/
test_commands_on_fakes.py).

Which states allow what (docs/intents.md, The merchant's commands):

- **cancel**: PENDING. What it holds goes back as on expiry (reason ``cancelled``;
  nothing, or less than ``min_sweep``: CANCELLED with ``intent_cancelled``).
- **refund**: FUNDED, and only while its prefill is ``ready``: no transaction of it
  is recorded, or each one recorded is final without paying (reverted at depth, or
  its nonce taken at depth), so nothing of it can still be mined. The prefill is
  withdrawn (``ready → cancelled``, a compare-and-set on the action row: an
  executor claiming it at the same moment either wins, and the refund is refused,
  or finds it cancelled) in the same transaction that decides the refund of
  everything held (reason ``merchant``).

A command repeated after it was applied (the intent is CANCELLED, or has a user
refund of the command's reason) answers the current state, changing nothing
(:attr:`Answer.applied` is False). Any other state is refused
(:class:`CommandRefused`, naming the state).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import structlog

from intentd.contract.record import IntentRow
from intentd.domain.intent import RefundReason
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.ports import UnitOfWork
from intentd.lifecycle.saving import load, save

__all__ = ["Answer", "Command", "CommandRefused", "cancel", "refund"]

log = structlog.get_logger()


class Command(StrEnum):
    CANCEL = "cancel"
    REFUND = "refund"

    @property
    def done(self) -> str:
        return "cancelled" if self is Command.CANCEL else "refunded"


_REASON = {Command.CANCEL: RefundReason.CANCELLED, Command.REFUND: RefundReason.MERCHANT}
"""The reason of the user refund a command decides (how a repeat is recognised)."""

_WHY_NOT: dict[Command, dict[IntentStatus, str]] = {
    Command.CANCEL: {
        IntentStatus.FUNDED: "it is fully paid and its prefill is about to start; ask for"
        " a refund instead",
        IntentStatus.INITIATED: "its prefill is broadcast",
        IntentStatus.COMPLETED: "it is completed",
        IntentStatus.EXPIRED: "it expired",
        IntentStatus.REFUNDING: "a refund of it is under way",
        IntentStatus.REFUNDED: "it is refunded",
    },
    Command.REFUND: {
        IntentStatus.PENDING: "it is not fully paid; cancel it to have what it received refunded",
        IntentStatus.INITIATED: "its prefill is broadcast; if it fails, the intent is"
        " refunded by itself",
        IntentStatus.COMPLETED: "it is completed",
        IntentStatus.EXPIRED: "it expired",
        IntentStatus.CANCELLED: "it is cancelled",
        IntentStatus.REFUNDING: "a refund of it is under way",
        IntentStatus.REFUNDED: "it is refunded",
    },
}

PREFILL_TAKEN = (
    "its prefill has been taken by the executor: a transaction of it may be broadcast;"
    " if the prefill fails, the intent is refunded by itself"
)


class CommandRefused(Exception):
    """The intent's state does not allow the command (the API answers 409)."""

    def __init__(self, command: Command, status: IntentStatus, why: str) -> None:
        super().__init__(f"an intent in status {status} cannot be {command.done}: {why}")
        self.command = command
        self.status = status
        self.why = why


@dataclass(frozen=True, slots=True)
class Answer:
    row: IntentRow
    """The intent as stored after the command."""
    applied: bool
    """False: the command had been applied before; nothing changed."""


async def cancel(uow: UnitOfWork, book: ChainBook, intent_id: int, *, now: datetime) -> Answer:
    """Cancel a PENDING intent; what it holds is refunded as on expiry."""
    return await _run(uow, book, Command.CANCEL, intent_id, now)


async def refund(uow: UnitOfWork, book: ChainBook, intent_id: int, *, now: datetime) -> Answer:
    """Refund everything a FUNDED intent holds, if its prefill can still be withdrawn."""
    return await _run(uow, book, Command.REFUND, intent_id, now)


async def _run(
    uow: UnitOfWork, book: ChainBook, command: Command, intent_id: int, now: datetime
) -> Answer:
    async with uow.transaction():
        row = await uow.intents.lock(intent_id)
        if row is None:
            raise LookupError(f"intent {intent_id} does not exist")
        if await _applied_before(uow, command, row):
            return Answer(row, applied=False)
        intent = load(book, row)
        if command is Command.CANCEL and row.status is IntentStatus.PENDING:
            intent.cancel()
        elif command is Command.REFUND and row.status is IntentStatus.FUNDED:
            # Not waiting on an executor that is taking the prefill: it would hold
            # the intent's row lock meanwhile (and a refund there would be refused).
            if not await uow.actions.cancel_prefill(row.id, wait=False):
                raise CommandRefused(command, row.status, PREFILL_TAKEN)
            intent.refund_on_request()
        else:
            raise CommandRefused(command, row.status, _WHY_NOT[command][row.status])
        await save(uow, book, row, intent, now=now)
        updated = await uow.intents.get(row.id)
        assert updated is not None
        log.info(
            f"intent {command.done} by the merchant",
            intent_id=row.id,
            intent_status=intent.status.value,
            refunded=intent.refunded - row.refunded,
        )
        return Answer(updated, applied=True)


async def _applied_before(uow: UnitOfWork, command: Command, row: IntentRow) -> bool:
    if command is Command.CANCEL and row.status is IntentStatus.CANCELLED:
        return True
    if row.status not in (IntentStatus.REFUNDING, IntentStatus.REFUNDED):
        return False
    return _REASON[command] in await uow.actions.refund_reasons(row.id)
