"""The reports' reads in PostgreSQL (``reports.ports.ReportReader``).

The exports' reads are ``adapters.postgres.report_exports`` (keyset pages of one index of
migration 0018 in time order). The caller opens the transaction (:func:`snapshot`: read
only, repeatable read), so every page of an export or a reconciliation reads the same
snapshot, however long the client takes to download it.

The reconciliation reads a client's intents that ended in the range (``terminal_at``,
set with a terminal status), ``BATCH`` at a time, and for each batch their deposits,
actions and transactions (with the signed bytes, decoded by
``reports.signed_transfers``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from intentd.adapters.postgres import Connection, report_exports
from intentd.reports.books import ActionRecord, DepositRecord, IntentBooks, IntentTerms, TxRecord
from intentd.reports.movements import Export, Movement
from intentd.reports.ports import ReportScope
from intentd.reports.ranges import ReportRange
from intentd.reports.signed_transfers import decode
from intentd.settings import Settings

__all__ = ["BATCH", "PostgresReports", "snapshot"]

BATCH = 500
"""Intents reconciled per round of child queries."""
_ENDED = """
SELECT id, terminal_at, intent_address, status, source_chain, destination_chain, token_in,
       token_out, total_due, fees_in_asset + app_fee_in_asset AS fees, amount_out, received,
       refunded, recipient, refund_address, relayer
  FROM intents
 WHERE client_id = $1 AND (terminal_at, id) > ($3, $4) AND terminal_at < $5
   AND source_chain = ANY($2::text[])
 ORDER BY terminal_at, id LIMIT $6
"""


@asynccontextmanager
async def snapshot(conn: Connection) -> AsyncIterator[None]:
    """A read-only, repeatable-read transaction: one snapshot for a whole report. Its
    statements are planned for their values every time (a cached generic plan cannot
    tell a page of a busy client from one of a quiet one)."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        yield


class PostgresReports:
    """The reports' reads over ``conn``, inside a :func:`snapshot` the caller holds."""

    def __init__(self, conn: Connection, settings: Settings) -> None:
        self._conn = conn
        self._settings = settings

    def movements(
        self, export: Export, scope: ReportScope, period: ReportRange
    ) -> AsyncIterator[Movement]:
        return report_exports.movements(self._conn, export, scope, period)

    async def books(self, scope: ReportScope, period: ReportRange) -> AsyncIterator[IntentBooks]:
        after: tuple[Any, int] = (period.start, -1)
        while True:
            rows = await self._conn.fetch(
                _ENDED, scope.client_id, list(scope.source_chains), *after, period.end, BATCH
            )
            for found in await self._books_of(rows):
                yield found
            if len(rows) < BATCH:
                return
            after = (rows[-1]["terminal_at"], rows[-1]["id"])

    async def _books_of(self, rows: Sequence[Any]) -> list[IntentBooks]:
        ids = [row["id"] for row in rows]
        deposits: dict[int, list[DepositRecord]] = defaultdict(list)
        for d in await self._conn.fetch(
            "SELECT id, intent_id, chain, token, amount, disposition, reason FROM deposits"
            " WHERE intent_id = ANY($1::bigint[]) ORDER BY id",
            ids,
        ):
            deposits[d["intent_id"]].append(
                DepositRecord(
                    d["id"], d["chain"], d["token"], int(d["amount"]), d["disposition"], d["reason"]
                )
            )
        actions: dict[int, list[ActionRecord]] = defaultdict(list)
        for a in await self._conn.fetch(
            "SELECT id, intent_id, kind, chain, token, amount, to_address, reason, deposit_id,"
            " status, gas_from_amount, amount_sent, gas_cost, tx_hash FROM actions"
            " WHERE intent_id = ANY($1::bigint[]) ORDER BY id",
            ids,
        ):
            actions[a["intent_id"]].append(_action_record(a))
        action_ids = [a.id for found in actions.values() for a in found]
        transactions: dict[int, list[TxRecord]] = defaultdict(list)
        for t in await self._conn.fetch(
            "SELECT t.action_id, a.intent_id, t.purpose, t.status, t.signer, t.tx_hash, t.raw_tx,"
            " t.gas_used, t.effective_gas_price, t.l1_fee FROM chain_transactions t"
            " JOIN actions a ON a.id = t.action_id"
            " WHERE t.action_id = ANY($1::bigint[]) ORDER BY t.id",
            action_ids,
        ):
            transactions[t["intent_id"]].append(
                TxRecord(
                    action_id=t["action_id"],
                    purpose=t["purpose"],
                    status=t["status"],
                    signer=t["signer"],
                    tx_hash=t["tx_hash"],
                    signed=decode(bytes(t["raw_tx"])),
                    gas_used=t["gas_used"],
                    effective_gas_price=_int(t["effective_gas_price"]),
                    l1_fee=_int(t["l1_fee"]),
                )
            )
        return [
            IntentBooks(
                self._terms(row),
                tuple(deposits[row["id"]]),
                tuple(actions[row["id"]]),
                tuple(transactions[row["id"]]),
            )
            for row in rows
        ]

    def _terms(self, row: Any) -> IntentTerms:
        chain = self._settings.chains.get(row["source_chain"])
        token = chain.token(row["token_in"]) if chain is not None else None
        return IntentTerms(
            id=row["id"],
            address=row["intent_address"],
            status=row["status"],
            source_chain=row["source_chain"],
            destination_chain=row["destination_chain"],
            token_in=row["token_in"],
            token_out=row["token_out"],
            total_due=int(row["total_due"]),
            fees=int(row["fees"]),
            amount_out=int(row["amount_out"]),
            received=int(row["received"]),
            refunded=int(row["refunded"]),
            recipient=row["recipient"],
            refund_address=row["refund_address"],
            relayer=row["relayer"],
            min_sweep=token.min_sweep_units if token is not None else None,
        )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _action_record(a: Any) -> ActionRecord:
    return ActionRecord(
        id=a["id"],
        kind=a["kind"],
        chain=a["chain"],
        token=a["token"],
        amount=int(a["amount"]),
        to_address=a["to_address"],
        reason=a["reason"],
        deposit_id=a["deposit_id"],
        status=a["status"],
        gas_from_amount=a["gas_from_amount"],
        amount_sent=_int(a["amount_sent"]),
        gas_cost=_int(a["gas_cost"]),
        tx_hash=a["tx_hash"],
    )
