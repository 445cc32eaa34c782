"""Who may start a trigger-processing call now: a per-intent cooldown and a per-caller cap,
shared by every API process and replica through PostgreSQL.

Each call reads the chain, so repeated calls are an amplifier. :class:`TriggerGate`
admits a call for intent ``i`` by caller ``c`` only if

- no call for ``i`` started in the last ``api.trigger_cooldown`` seconds (counted from
  the start of the previous call, whether it succeeded or not, in any process), else
  ``TriggerRefused("trigger_cooldown")`` with the seconds left;
- fewer than ``api.trigger_max_per_client`` calls of ``c`` are running (in all
  processes together), else ``TriggerRefused("too_many_triggers")``.

A caller (:func:`caller_of`) is an API key's client, or a payment-modal session: a
payer pressing "I have made payment" spends the session's slots, never its
merchant's. The cooldown also refuses a second call for an intent while its first
runs. The admission is one round trip (``adapters.postgres.trigger_runs``) on the API's
``Database``: with the database away it is a 503 ``database_unavailable``, never
admitted unchecked. The slot is given back when the call ends; a slot whose process
died lapses ``LEASE_MARGIN`` seconds after the call's deadline (``api.trigger_timeout``).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from uuid import UUID

from intentd.adapters.postgres import trigger_runs
from intentd.api.connections import Database
from intentd.api.problems import ApiProblem
from intentd.settings import Settings

__all__ = ["LEASE_MARGIN", "TriggerGate", "TriggerRefused", "caller_of"]

LEASE_MARGIN = 10.0
"""Seconds after a call's deadline until the slot of a process that died lapses."""


class TriggerRefused(Exception):
    """Not now: try again in ``retry_after`` seconds (answered 429 with ``Retry-After``)."""

    def __init__(self, code: str, detail: str, retry_after: int) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.retry_after = retry_after


def caller_of(client_id: UUID, session_id: str | None) -> str:
    """Whose slots a call spends: the session's, or else the client's."""
    return f"session:{session_id}" if session_id is not None else f"client:{client_id}"


class TriggerGate:
    def __init__(self, settings: Settings, database: Database) -> None:
        api = settings.api
        self._cooldown = api.trigger_cooldown
        self._cap = api.trigger_max_per_client
        self._lease = api.trigger_timeout + LEASE_MARGIN
        self._database = database

    @asynccontextmanager
    async def admit(self, intent_id: int, caller: str) -> AsyncIterator[None]:
        """Hold a slot for one call while the ``with`` body runs; raise
        :class:`TriggerRefused` instead if the call may not start now (an
        ``ApiProblem`` 503 if the database cannot tell)."""
        async with self._database.connection() as conn:
            admission = await trigger_runs.admit(
                conn,
                intent_id,
                caller,
                cooldown=self._cooldown,
                cap=self._cap,
                lease=self._lease,
            )
        if admission.run_id is None:
            raise self._refusal(admission)
        try:
            yield
        finally:
            await self._give_back(admission.run_id)

    def _refusal(self, admission: trigger_runs.Admission) -> TriggerRefused:
        wait = max(1, math.ceil(admission.retry_after))
        if admission.refused == "trigger_cooldown":
            return TriggerRefused(
                "trigger_cooldown",
                f"this intent was triggered less than {self._cooldown:g} s ago",
                wait,
            )
        return TriggerRefused(
            "too_many_triggers",
            f"{self._cap} trigger-processing calls of this caller are running",
            wait,
        )

    async def _give_back(self, run_id: int) -> None:
        """Free the slot; with the database away it lapses at its lease instead (the
        call's own answer stands)."""
        try:
            async with self._database.connection() as conn:
                await trigger_runs.finish(conn, run_id)
        except ApiProblem:
            pass
