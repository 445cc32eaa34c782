"""Which intent addresses the balance reconciliation of a chain covers (PostgreSQL).

:class:`PostgresOpenNativeIntents` is both the poller's
:class:`~intentd.indexer.ports.AddressSource` (the watched set reads every intent
through it) and its :class:`~intentd.indexer.reconciliation.OpenNativeIntents`: from
the same rows it keeps, in memory, the intents whose source chain is the chain and
whose ``tokenIn`` is the native coin, with their reconciliation windows
(:meth:`intentd.indexer.balances.Reconciled.of_intent`). The poller knows no states,
so the window is what makes an intent "open": from a little before its creation to a
while after its expiry (both fixed when it is created).

So the open set is exactly as fresh as the watched set, which the poller refreshes
after a batch's blocks were read and before they are matched and reconciled (an
intent committed before its payment block was read is reconciled), and asking for it
costs no query. Windows that ended a day before the newest block asked about are
forgotten (a rewind never goes back that far).
"""

from __future__ import annotations

from collections.abc import Sequence

from intentd.adapters.postgres import Pool
from intentd.indexer.balances import Reconciled
from intentd.settings import NATIVE_TOKEN

__all__ = ["PostgresOpenNativeIntents"]

_NATIVE = NATIVE_TOKEN.lower()
# Every intent comes back (the watched set needs them all); the times only for ours.
# Two statements, so that the usual one (no gaps) is a plain range scan of the key.
_SELECT = """
    SELECT id, intent_address,
           CASE WHEN ours THEN created_at END AS created_at,
           CASE WHEN ours THEN expires_at END AS expires_at
      FROM (SELECT id, intent_address, created_at, expires_at,
                   source_chain = $3 AND lower(token_in) = $4 AS ours
              FROM intents WHERE {where} ORDER BY id LIMIT $2) AS page
"""
_NEWER = _SELECT.format(where="id > $1")
_WITH_GAPS = _SELECT.format(where="id > $1 OR id = ANY($5::bigint[])")
_KEEP = 86_400
"""Seconds a window is kept after it ended (measured in block time)."""


class PostgresOpenNativeIntents:
    def __init__(self, pool: Pool, chain: str) -> None:
        self._pool = pool
        self._chain = chain
        self._open: dict[str, Reconciled] = {}

    async def intent_addresses(
        self, after_id: int, also_ids: Sequence[int], limit: int
    ) -> list[tuple[int, str]]:
        rows = await self._pool.fetch(
            _WITH_GAPS if also_ids else _NEWER,
            after_id,
            limit,
            self._chain,
            _NATIVE,
            *([list(also_ids)] if also_ids else []),
        )
        for row in rows:
            if row["created_at"] is not None:
                window = Reconciled.of_intent(
                    row["intent_address"],
                    int(row["created_at"].timestamp()),
                    int(row["expires_at"].timestamp()),
                )
                self._open[window.address] = window
        return [(row["id"], row["intent_address"]) for row in rows]

    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        """The open windows that meet ``first_time..last_time``, as of the last refresh of
        the watched set that reads through this source."""
        self._open = {
            address: window
            for address, window in self._open.items()
            if window.last_time >= last_time - _KEEP
        }
        return [
            window
            for window in self._open.values()
            if window.first_time <= last_time and first_time <= window.last_time
        ]
