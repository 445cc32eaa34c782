"""The exports' reads in PostgreSQL: a client's movements of one kind, in time order.

Guarantees of :func:`movements`: every statement walks one index of migration 0018 in
time order, :data:`PAGE` rows after the last row read (keyset), so it starts at once
and a million rows never sit in memory; every row names the client and the source
chains its key may see. It reads:

- deposits: ``deposits`` by ``block_time``, the user's money only (credited, refund
  owed, retained); not our own gas top-ups (``internal``), nor tokens the chain does not
  list (``ignored``), nor deposits a reorg took back (``retracted``);
- payments, refunds, fees: confirmed ``actions`` by the time they were confirmed, with
  their confirmed transaction's signer and block;
- gas: final ``chain_transactions`` (confirmed or reverted) by the same time, and a
  confirmed gas top-up's coin.

The caller holds the snapshot (``adapters.postgres.report_queries.snapshot``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from intentd.adapters.postgres import Connection
from intentd.domain.actions import NATIVE
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

__all__ = ["PAGE", "movements"]

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
_ACTION_KINDS = {
    MovementKind.PAYMENT: "prefill",
    MovementKind.RELAYER_REPAYMENT: "relayer_refund",
    MovementKind.REFUND: "user_refund",
    MovementKind.FEE: "fee_sweep",
}
_KIND_OF_ACTION = {kind: movement for movement, kind in _ACTION_KINDS.items()}


async def movements(
    conn: Connection, export: Export, scope: ReportScope, period: ReportRange
) -> AsyncIterator[Movement]:
    """Every movement of ``export`` in ``period`` for ``scope``, in time order."""
    args: list[Any] = [scope.client_id, list(scope.source_chains)]
    if export is Export.DEPOSITS:
        async for row in _pages(conn, _DEPOSITS, period, args):
            yield _deposit(row)
    elif export is Export.GAS:
        async for row in _pages(conn, _GAS, period, args):
            for movement in _gas(row):
                yield movement
    else:
        kinds = [_ACTION_KINDS[kind] for kind in EXPORT_KINDS[export]]
        async for row in _pages(conn, _ACTIONS, period, [*args, kinds]):
            yield _action(row)


async def _pages(
    conn: Connection, sql: str, period: ReportRange, args: Sequence[Any]
) -> AsyncIterator[Any]:
    """Every row of ``sql`` in ``period``, a page at a time after the last one read
    (``$1``, ``$5``: its time and id; ``$2`` the end; ``$6`` the page's size)."""
    start, last = period.start, -1
    while True:
        rows = await conn.fetch(sql, start, period.end, *args[:2], last, PAGE, *args[2:])
        for row in rows:
            yield row
        if len(rows) < PAGE:
            return
        start, last = rows[-1]["at"], rows[-1]["id"]


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
