"""Loading an intent for a handler and saving what the domain decided (one transaction).

:func:`load` builds the aggregate from its row with ``tokenIn``'s ``min_sweep`` from
the chain book; :func:`save` stores the intent if it changed (compare-and-set on its
version), then the actions it decided, then its events as outbox rows and event log rows, all on the
caller's unit of work and inside the caller's transaction; and reports what the
intent retained.
"""

from __future__ import annotations

from datetime import datetime

import orjson
import structlog

from intentd import observability as metrics
from intentd.contract.events import envelope
from intentd.contract.record import IntentRow, render_record
from intentd.domain.intent import Intent
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.ports import UnitOfWork

__all__ = ["load", "save"]

log = structlog.get_logger()


def load(book: ChainBook, row: IntentRow) -> Intent:
    """The intent of ``row``, with ``tokenIn``'s minimum refund from the chain book."""
    token = book.token(row.source_chain, row.token_in)
    return row.intent(min_sweep=token.min_sweep if token is not None else 0)


async def save(
    uow: UnitOfWork,
    book: ChainBook,
    row: IntentRow,
    intent: Intent,
    *,
    now: datetime,
    deposit_id: int | None = None,
) -> None:
    """Store the intent if it changed, then its actions and events; report what it retained."""
    for kept in intent.retained:
        reason = kept.reason.value if kept.reason else "fees"
        metrics.RETAINED.labels(kept.chain, kept.kind.value, reason).inc()
        log.info(
            "amount below the token's min_sweep retained at the intent address",
            intent_id=row.id,
            kind=kept.kind.value,
            token=kept.token,
            amount=kept.amount,
            reason=reason,
        )
    terms = intent.terms
    changed = intent.valuation is not None or (
        intent.status,
        intent.received,
        intent.event_sequence,
        intent.tx_hash,
        intent.refunded,
        terms.total_due,
        terms.amount_out,
        intent.awaiting_price,
    ) != (
        row.status,
        row.received,
        row.event_sequence,
        row.tx_hash,
        row.refunded,
        row.total_due,
        row.amount_out,
        row.awaiting_price,
    )
    if changed:
        await uow.intents.save(intent, expected_version=row.version)
        if intent.status is not row.status:
            metrics.TRANSITIONS.labels(row.status.value, intent.status.value).inc()
    for action in intent.actions:
        await uow.actions.create(
            intent_id=row.id,
            action=action,
            address_index=row.address_index,
            deposit_id=deposit_id,
        )
    if not intent.events:
        return
    updated = await uow.intents.get(row.id)
    assert updated is not None
    record = render_record(updated)

    def decimals_of(chain: str, token: str) -> int:
        found = book.token(chain, token)
        return found.decimals if found is not None else row.asset_token_decimals

    mode = book.mode(row.source_chain)
    for event in intent.events:
        body = envelope(
            event,
            intent_id=row.id,
            record=record,
            decimals=row.asset_token_decimals,
            created_at=now,
            mode=mode,
            decimals_of=decimals_of,
        )
        payload = orjson.dumps(body)
        await uow.outbox.add(topic=book.events_topic, key=str(row.id), payload=payload)
        await uow.events.record(
            intent_id=row.id,
            client_id=row.client_id,
            envelope=body,
            payload=payload,
            created_at=now,
        )
