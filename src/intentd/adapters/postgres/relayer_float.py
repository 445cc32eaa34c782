"""The relayer's float in PostgreSQL (``relayer_float``, ``0017_relayer_float.sql``).

The executor of a chain writes it (:func:`save_float`) from the figures of
:func:`exposure` and the balances it read; the API and ``intentd status`` read it
(:func:`load_float`), never the chain. Guarantees:

- :func:`exposure` reads every figure in one statement (one snapshot): an intent moving
  from PENDING to FUNDED is counted once, in ``pending`` or in ``reserved``.
- :func:`relayer_commitments` takes a transaction-scoped advisory lock of the chain before
  it reads, so the prefill checks of a chain (and what they sign) follow one another.
- :func:`save_float` never replaces a row with an older one (``as_of``).
- The "newest paid" block counts the relayer's reverted transfers too: one spent gas at
  its block (never the amount), and a node below it still shows that gas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from intentd.adapters.postgres import Connection, Pool
from intentd.adapters.postgres.db_failures import classify
from intentd.domain.actions import SignerKind
from intentd.domain.liquidity import Float
from intentd.execution.float_figures import Commitments, Exposure, FloatRow
from intentd.intents.admission import FloatReading
from intentd.lifecycle.failures import Failure

__all__ = [
    "PostgresFloatSource",
    "StoredFloat",
    "exposure",
    "load_float",
    "relayer_commitments",
    "save_float",
]

_CHECK_LOCK = 0x1A7E0E02
"""Advisory lock class of a chain's prefill checks (``hashtext(chain)`` is the other key)."""


async def relayer_commitments(conn: Connection, chain: str, relayer: str) -> Commitments:
    await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", _CHECK_LOCK, chain)
    rows = await conn.fetch(
        "SELECT lower(token) AS token, SUM(amount) AS amount FROM actions"
        " WHERE chain = $1 AND kind = 'prefill' AND status = 'submitted' GROUP BY 1",
        chain,
    )
    newest = await conn.fetchval(f"SELECT {_NEWEST_PAID}", chain, relayer)
    return Commitments({r["token"]: int(r["amount"]) for r in rows}, int(newest))


_NEWEST_PAID = """GREATEST(
       (SELECT COALESCE(max(block_number), 0) FROM chain_transactions
         WHERE chain = $1 AND signer = $2 AND status = 'confirmed' AND purpose = 'transfer'),
       (SELECT COALESCE(max(block_number), 0) FROM chain_transactions
         WHERE chain = $1 AND signer = $2 AND status = 'reverted' AND purpose = 'transfer'))"""
"""The newest block holding a final transfer of the relayer: confirmed (it paid), or
reverted (it paid nothing, but spent gas there); each by its partial index (0017, 0023)."""

_EXPOSURE = f"""
SELECT 'reserved' AS figure, lower(token) AS token, SUM(amount) AS amount, 0::bigint AS overdue,
       now() AS as_of
  FROM actions
 WHERE chain = $1 AND kind = 'prefill' AND status IN ('ready', 'submitted')
 GROUP BY 2
UNION ALL
SELECT 'owed', lower(token), SUM(amount),
       count(*) FILTER (WHERE created_at < now() - make_interval(secs => $3)), now()
  FROM actions
 WHERE chain = $1 AND kind = 'relayer_refund' AND status IN ('ready', 'held', 'submitted', 'failed')
 GROUP BY 2
UNION ALL
SELECT 'pending', lower(token_out), SUM(amount_out), 0, now()
  FROM intents
 WHERE status = 'PENDING' AND destination_chain = $1
 GROUP BY 2
UNION ALL
SELECT 'paid', '', {_NEWEST_PAID}, 0, now()
"""


async def exposure(conn: Connection, chain: str, relayer: str, overdue_after: float) -> Exposure:
    """Reserved, owed (and how many overdue), pending per token, in one statement."""
    rows = await conn.fetch(_EXPOSURE, chain, relayer, overdue_after)
    figures: dict[str, dict[str, int]] = {"reserved": {}, "owed": {}, "pending": {}}
    overdue: dict[str, int] = {}
    newest, as_of = 0, rows[0]["as_of"]  # the 'paid' row is always there (no GROUP BY)
    for row in rows:
        if row["figure"] == "paid":
            newest = int(row["amount"])
            continue
        figures[row["figure"]][row["token"]] = int(row["amount"])
        if row["overdue"]:
            overdue[row["token"]] = int(row["overdue"])
    return Exposure(
        as_of=as_of,
        reserved=figures["reserved"],
        owed=figures["owed"],
        overdue=overdue,
        pending=figures["pending"],
        newest_paid=newest,
    )


async def save_float(
    conn: Connection, chain: str, rows: Sequence[FloatRow], as_of: datetime
) -> None:
    await conn.executemany(
        """
        INSERT INTO relayer_float AS f (chain, holder, token, address, balance, block_number,
               reserved, owed, owed_overdue, pending, as_of)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON CONFLICT (chain, holder, token) DO UPDATE
           SET address = EXCLUDED.address, balance = EXCLUDED.balance,
               block_number = EXCLUDED.block_number, reserved = EXCLUDED.reserved,
               owed = EXCLUDED.owed, owed_overdue = EXCLUDED.owed_overdue,
               pending = EXCLUDED.pending, as_of = EXCLUDED.as_of
         WHERE f.as_of <= EXCLUDED.as_of
        """,
        [_row_values(chain, r, as_of) for r in rows],
    )


def _row_values(chain: str, r: FloatRow, as_of: datetime) -> tuple[object, ...]:
    return (
        chain, r.holder.value, r.token, r.address, r.balance, r.block, r.reserved, r.owed,
        r.owed_overdue, r.pending, as_of,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class StoredFloat:
    """A row of ``relayer_float`` as read, with its age by the database's clock."""

    chain: str
    holder: SignerKind
    token: str
    address: str
    figures: Float
    block: int
    owed_overdue: int
    as_of: datetime
    age: float
    """Seconds between ``as_of`` and the read."""


async def load_float(conn: Connection) -> list[StoredFloat]:
    rows = await conn.fetch(
        "SELECT chain, holder, token, address, balance, block_number, reserved, owed,"
        " owed_overdue, pending, as_of,"
        " GREATEST(EXTRACT(EPOCH FROM now() - as_of), 0)::float8 AS age"
        " FROM relayer_float ORDER BY chain, holder DESC, token"
    )
    return [
        StoredFloat(
            chain=r["chain"],
            holder=SignerKind(r["holder"]),
            token=r["token"],
            address=r["address"],
            figures=Float(int(r["balance"]), int(r["reserved"]), int(r["owed"]), int(r["pending"])),
            block=r["block_number"],
            owed_overdue=r["owed_overdue"],
            as_of=r["as_of"],
            age=float(r["age"]),
        )
        for r in rows
    ]


class PostgresFloatSource:
    """:class:`~intentd.intents.admission.FloatSource` over a pool: the relayer's rows, or
    None while the database is unavailable (the view it feeds then ages, and goes stale)."""

    def __init__(self, pool: Pool, *, timeout: float) -> None:
        self._pool = pool
        self._timeout = timeout

    async def relayer_floats(self) -> list[FloatReading] | None:
        try:
            async with self._pool.acquire(timeout=self._timeout) as conn:
                rows = await load_float(conn)
        except Exception as exc:
            if classify(exc) is Failure.PERMANENT:
                raise
            return None
        return [
            FloatReading(r.chain, r.token, r.figures, age=r.age, as_of=r.as_of.timestamp())
            for r in rows
            if r.holder is SignerKind.RELAYER
        ]
