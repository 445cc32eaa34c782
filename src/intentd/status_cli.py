"""``intentd status``: the relayer's float of every chain, for an operator at a terminal.

It reads ``relayer_float`` in PostgreSQL, the rows each chain's executor stores
(``execution.float_report``), never the chains: the same figures the API admits intents
by and the metrics show. One line per (chain, holder, token), amounts exact in whole
units: the balance at ``BLOCK``, what is reserved by prefills, what is free, what is owed
back to the relayer (and how many repayments are overdue), what PENDING intents will
ask, the most a new intent may ask (``COVER``), and the age of the reading (``STALE``
past ``liquidity.max_age``: the API refuses creates to that chain). ``--json`` prints
the same as JSON, amounts in base units.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from intentd.adapters.postgres import create_pool
from intentd.adapters.postgres.relayer_float import StoredFloat, load_float
from intentd.domain.actions import SignerKind
from intentd.domain.amounts import format_amount
from intentd.domain.liquidity import cover
from intentd.settings import Settings

__all__ = ["float_table", "status_command"]

_COLUMNS = (
    "CHAIN", "HOLDER", "TOKEN", "BALANCE", "RESERVED", "FREE", "OWED", "OVERDUE", "PENDING",
    "COVER", "BLOCK", "AGE",
)  # fmt: skip


async def status_command(args: argparse.Namespace, settings: Settings) -> int:
    pool = await create_pool(settings.database.url.get_secret_value(), max_size=1)
    try:
        async with pool.acquire() as conn:
            rows = await load_float(conn)
    finally:
        await pool.close()
    if args.json:
        print(json.dumps([_as_json(row, settings) for row in rows], indent=2))
    else:
        print(float_table(rows, settings))
    return 0


def float_table(rows: Sequence[StoredFloat], settings: Settings) -> str:
    """The rows as an aligned text table (pure)."""
    if not rows:
        return "no float stored yet: an executor stores its chain's within seconds of starting"
    lines = [list(_COLUMNS)]
    for row in rows:
        symbol, decimals = _token(settings, row)
        figures = row.figures
        relayer = row.holder is SignerKind.RELAYER

        def units(value: int, decimals: int = decimals) -> str:
            return format_amount(value, decimals)

        stale = row.age > settings.liquidity.max_age
        lines.append(
            [
                row.chain,
                row.holder.value,
                symbol,
                units(figures.balance),
                units(figures.reserved) if relayer else "-",
                units(figures.free) if relayer else "-",
                units(figures.owed) if relayer else "-",
                str(row.owed_overdue) if relayer else "-",
                units(figures.pending) if relayer else "-",
                units(cover(figures, settings.liquidity.overcommit_bps)) if relayer else "-",
                str(row.block),
                f"{row.age:.0f}s" + (" STALE" if stale else ""),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _token(settings: Settings, row: StoredFloat) -> tuple[str, int]:
    chain = settings.chains.get(row.chain)
    found = chain.token(row.token) if chain is not None else None
    if found is None:  # a chain or token no longer configured: base units, by address
        return row.token, 0
    return found.symbol, found.decimals


def _as_json(row: StoredFloat, settings: Settings) -> dict[str, Any]:
    symbol, _ = _token(settings, row)
    figures = row.figures
    return {
        "chain": row.chain,
        "holder": row.holder.value,
        "token": row.token,
        "symbol": symbol,
        "address": row.address,
        "balance": str(figures.balance),
        "reserved": str(figures.reserved),
        "free": str(figures.free),
        "owed": str(figures.owed),
        "owed_overdue": row.owed_overdue,
        "pending": str(figures.pending),
        "cover": str(cover(figures, settings.liquidity.overcommit_bps)),
        "block": row.block,
        "as_of": row.as_of.isoformat(),
        "age_seconds": round(row.age, 3),
        "stale": row.age > settings.liquidity.max_age,
    }
