"""Trigger-processing's admission in PostgreSQL: one cooldown per intent, a cap of calls
per caller, shared by every API process and replica (migration 0016).

:func:`admit` asks, in one round trip and one transaction (``intentd_trigger_admit``),
whether a call for ``intent_id`` by ``caller`` may start now: no call for the intent
started in the last ``cooldown`` seconds (a compare-and-set on its
``trigger_cooldowns`` row, by the database's clock), and fewer than ``cap`` calls of
``caller`` are running (its ``trigger_runs`` rows, counted under a transaction
advisory lock of the caller). Admitted, the call holds a row until :func:`finish`
deletes it, or until ``lease`` seconds have passed (a process that died during the
call). A refusal says which limit and the seconds until a retry may pass; nothing is
written for it. Neither waits for a disk flush (a crash of the server may lose a
limit's last moments, never money: see the migration).
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.adapters.postgres import Connection

__all__ = ["Admission", "admit", "finish"]


@dataclass(frozen=True, slots=True)
class Admission:
    run_id: int | None
    """The running call's row; None when refused."""
    refused: str | None = None
    """``trigger_cooldown`` or ``too_many_triggers``."""
    retry_after: float = 0.0


async def admit(
    conn: Connection, intent_id: int, caller: str, *, cooldown: float, cap: int, lease: float
) -> Admission:
    record = await conn.fetchrow(
        "SELECT run_id, refused, retry_after FROM intentd_trigger_admit($1, $2, $3, $4, $5)",
        intent_id,
        caller,
        float(cooldown),
        cap,
        float(lease),
    )
    assert record is not None
    return Admission(record["run_id"], record["refused"], float(record["retry_after"] or 0.0))


async def finish(conn: Connection, run_id: int) -> None:
    """The call ended: its slot is free."""
    await conn.execute("SELECT intentd_trigger_done($1)", run_id)
