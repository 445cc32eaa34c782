"""The reports' reads in PostgreSQL (``reports.ports.ReportReader``).

Every query names the client and the source chains its key may see, and walks one
index of migration 0018 in time order, a page of :data:`PAGE` rows at a time after the
last row read (keyset): each statement is small and planned to start at once from the
index (a whole-range query was planned as a sort of every row first: 12 s before the
first byte of a million, and at the mercy of the statement timeout), and a million
rows never sit in memory. The caller opens the transaction (:func:`snapshot`: read
only, repeatable read), so every page of an export or a reconciliation reads the same
snapshot, however long the client takes to download it.

What each export reads:

- deposits: ``deposits`` by ``block_time``, the user's money only (credited, refund
  owed, retained); not our own gas top-ups (``internal``), nor tokens the chain does not
  list (``ignored``), nor deposits a reorg took back (``retracted``);
- payments, refunds, fees: confirmed ``actions`` by the time they were confirmed, with
  their confirmed transaction's signer and block;
- gas: final ``chain_transactions`` (confirmed or reverted) by the same time.

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

from intentd.adapters.postgres import Connection
from intentd.domain.actions import NATIVE
from intentd.reports.books import (
    ActionRecord,
    DepositRecord,
    IntentBooks,
    IntentTerms,
    TxRecord,
)
from intentd.reports.movements import (
    EXPORT_KINDS,
    Export,
    GasFigures,
    IntentRef,
    Movement,
    MovementKind,
)
from intentd.reports.ports import ReportScope
from intentd.reports.ranges import ReportRange
from intentd.reports.signed_transfers import decode
from intentd.settings import Settings

__all__ = ["BATCH", "PostgresReports", "snapshot"]

BATCH = 500
"""Intents reconciled per round of child queries."""
PAGE = 1000
"""Rows read per statement of an export."""

_INTENT = (
    "i.id AS intent_id, i.intent_address, i.source_chain, i.destination_chain, i.token_in,"
    " i.token_out, i.asset_token_symbol, i.asset_token_decimals, i.token_out_decimals,"
    " i.total_due, i.amount_out, i.total_in_usd, i.fees_in_usd + i.app_fee_in_usd AS fees_usd,"
    " i.metadata::text AS metadata"
)
_MINE = "i.client_id = $3 AND i.source_chain = ANY($4::text[])"
_DEPOSITS = f"""
SELECT d.id, d.block_time AS at, d.chain, d.token, d.from_address, d.to_address, d.amount,
       d.disposition, d.reason, d.tx_hash, d.block_number, {_INTENT}
  FROM deposits d JOIN intents i ON i.id = d.intent_id
 WHERE (d.block_time, d.id) > ($1, $5) AND d.block_time < $2 AND {_MINE}
   AND d.disposition IN ('credited', 'refund_owed', 'retained')
 ORDER BY d.block_time, d.id LIMIT $6
"""
_ACTIONS = f"""
SELECT a.id, a.updated_at AS at, a.kind, a.chain, a.token, a.to_address, a.amount_sent,
       a.reason, a.tx_hash, t.signer, t.block_number, {_INTENT}
  FROM actions a JOIN intents i ON i.id = a.intent_id
  LEFT JOIN chain_transactions t ON t.tx_hash = a.tx_hash
 WHERE a.status = 'confirmed' AND (a.updated_at, a.id) > ($1, $5) AND a.updated_at < $2
   AND {_MINE} AND a.kind = ANY($7::text[])
 ORDER BY a.updated_at, a.id LIMIT $6
"""
_GAS = f"""
SELECT t.id, t.updated_at AS at, t.chain, t.signer, t.to_address, t.value, t.purpose,
       t.status, t.tx_hash, t.block_number, t.gas_used, t.effective_gas_price, t.l1_fee,
       a.kind AS action_kind, {_INTENT}
  FROM chain_transactions t JOIN actions a ON a.id = t.action_id
  JOIN intents i ON i.id = a.intent_id
 WHERE t.status IN ('confirmed', 'reverted') AND (t.updated_at, t.id) > ($1, $5)
   AND t.updated_at < $2 AND {_MINE}
 ORDER BY t.updated_at, t.id LIMIT $6
"""
_ENDED = """
SELECT id, terminal_at, intent_address, status, source_chain, destination_chain, token_in,
       token_out, total_due, fees_in_asset + app_fee_in_asset AS fees, amount_out, received,
       refunded, recipient, refund_address, relayer
  FROM intents
 WHERE client_id = $1 AND (terminal_at, id) > ($3, $4) AND terminal_at < $5
   AND source_chain = ANY($2::text[])
 ORDER BY terminal_at, id LIMIT $6
"""
_ACTION_KINDS = {
    MovementKind.PAYMENT: "prefill",
    MovementKind.RELAYER_REPAYMENT: "relayer_refund",
    MovementKind.REFUND: "user_refund",
    MovementKind.FEE: "fee_sweep",
}
_KIND_OF_ACTION = {kind: movement for movement, kind in _ACTION_KINDS.items()}


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

    async def movements(
        self, export: Export, scope: ReportScope, period: ReportRange
    ) -> AsyncIterator[Movement]:
        args: list[Any] = [scope.client_id, list(scope.source_chains)]
        if export is Export.DEPOSITS:
            async for row in self._pages(_DEPOSITS, period, args):
                yield _deposit(row)
        elif export is Export.GAS:
            async for row in self._pages(_GAS, period, args):
                for movement in _gas(row):
                    yield movement
        else:
            kinds = [_ACTION_KINDS[kind] for kind in EXPORT_KINDS[export]]
            async for row in self._pages(_ACTIONS, period, [*args, kinds]):
                yield _action(row)

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

    async def _pages(
        self, sql: str, period: ReportRange, args: Sequence[Any]
    ) -> AsyncIterator[Any]:
        """Every row of ``sql`` in ``period``, a page at a time after the last one read
        (``$1``, ``$5``: its time and id; ``$2`` the end; ``$6`` the page's size)."""
        start, last = period.start, -1
        while True:
            rows = await self._conn.fetch(sql, start, period.end, *args[:2], last, PAGE, *args[2:])
            for row in rows:
                yield row
            if len(rows) < PAGE:
                return
            start, last = rows[-1]["at"], rows[-1]["id"]

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


def _intent(row: Any) -> IntentRef:
    return IntentRef(
        id=row["intent_id"],
        address=row["intent_address"],
        source_chain=row["source_chain"],
        destination_chain=row["destination_chain"],
        token_in=row["token_in"],
        token_out=row["token_out"],
        token_in_symbol=row["asset_token_symbol"],
        token_in_decimals=row["asset_token_decimals"],
        token_out_decimals=row["token_out_decimals"],
        total_due=int(row["total_due"]),
        amount_out=int(row["amount_out"]),
        total_in_usd=row["total_in_usd"],
        fees_in_usd=row["fees_usd"],
        metadata=row["metadata"],
    )


def _deposit(row: Any) -> Movement:
    reason = row["disposition"] + (f":{row['reason']}" if row["reason"] else "")
    return Movement(
        MovementKind.DEPOSIT,
        row["at"],
        _intent(row),
        row["chain"],
        row["token"],
        row["from_address"],
        row["to_address"],
        int(row["amount"]),
        reason,
        row["tx_hash"],
        row["block_number"],
    )


def _action(row: Any) -> Movement:
    intent = _intent(row)
    signer = row["signer"] or (intent.address if row["kind"] != "prefill" else "")
    return Movement(
        _KIND_OF_ACTION[row["kind"]],
        row["at"],
        intent,
        row["chain"],
        row["token"],
        signer,
        row["to_address"],
        int(row["amount_sent"] or 0),
        row["reason"] or "",
        row["tx_hash"] or "",
        row["block_number"],
    )


def _gas(row: Any) -> list[Movement]:
    """The gas a final transaction burned, and a confirmed top-up's coin."""
    intent = _intent(row)
    figures = GasFigures(
        row["gas_used"] or 0, int(row["effective_gas_price"] or 0), int(row["l1_fee"] or 0)
    )
    burned = figures.gas_used * figures.effective_gas_price + figures.l1_fee
    what = f"{row['action_kind']}:{row['purpose']}"
    reverted = row["status"] == "reverted"
    found = [
        Movement(
            MovementKind.GAS,
            row["at"],
            intent,
            row["chain"],
            NATIVE,
            row["signer"],
            "",
            burned,
            what + (":reverted" if reverted else ""),
            row["tx_hash"],
            row["block_number"],
            figures,
        )
    ]
    if row["purpose"] == "gas_topup" and not reverted:
        found.append(
            Movement(
                MovementKind.GAS_TOPUP,
                row["at"],
                intent,
                row["chain"],
                NATIVE,
                row["signer"],
                row["to_address"],
                int(row["value"]),
                row["action_kind"],
                row["tx_hash"],
                row["block_number"],
            )
        )
    return found


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
