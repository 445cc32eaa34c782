"""Admission: quotes and creates only for what the relayer's float can cover.

The API (and ``intentd intents create``) keeps a view of ``relayer_float``, the rows the
executors store (``execution.float_report``), loaded from PostgreSQL every
``liquidity.view_refresh`` seconds by :meth:`LiquidityGate.follow`; a request never waits
on RPC or on that load. Guarantees (docs/api.md, Quotes and fees; docs/execution.md,
"The relayer's float"):

- A create whose ``amount_out`` is above the destination's :func:`~intentd.domain.
  liquidity.cover` (what is free, within the over-commit of the PENDING intents) is
  refused before anything is written: :class:`InsufficientLiquidity` (409
  ``insufficient_liquidity``). Quote lists leave such routes out; a single quote is refused.
- A float that is missing or older than ``liquidity.max_age`` (the executor's reading,
  plus the time since the view was loaded) decides nothing: :class:`LiquidityUnknown`
  (503 ``liquidity_unknown``, ``Retry-After``). Never admitted on no evidence.
- Within one process, concurrent creates cannot share one headroom: each admitted create
  *holds* its amount (checked and added in one step, no ``await`` between) until a
  reading taken ``HOLD_MARGIN`` seconds after its row was written replaces it, or is
  released if nothing was written. Across API processes the view lags by at most a
  refresh: together they may admit a little beyond the factor. The float's hard limit
  is the executor's: a prefill is never signed beyond the relayer's balance.
- A retried create with its ``Idempotency-Key`` answers the intent it made, whatever the
  float says now (the writer is asked only for new intents).
- Loads that fail one after the other (the database away) are one warning when they
  start, a summary every 30 s, one line when a load succeeds again
  (``supervision.episodes``); the database's outage itself is the process's outage log's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from intentd import observability as metrics
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount
from intentd.domain.liquidity import Float, cover
from intentd.intents.ports import IntentStore, NewIntent
from intentd.intents.quotes import Quote
from intentd.intents.validation import IntentRequestError
from intentd.intents.writer import AddressSource, IntentWriter
from intentd.settings import Settings
from intentd.supervision.episodes import Episodes, Wording
from intentd.supervision.outage_log import emit

__all__ = [
    "HOLD_MARGIN",
    "RETRY_AFTER",
    "AdmittingWriter",
    "FloatReading",
    "FloatSource",
    "InsufficientLiquidity",
    "LiquidityGate",
    "LiquidityRefused",
    "LiquidityUnknown",
]

log = structlog.get_logger()

HOLD_MARGIN = 5.0
"""Seconds after an intent's ``created_at`` before a reading is trusted to count it in
``pending`` (its insert commits after ``created_at``); until then it is held here too."""
RETRY_AFTER = 5
"""Seconds a ``liquidity_unknown`` answer asks the client to wait."""
UNLOADED = Wording(
    begun="the relayer's float could not be loaded; the view ages",
    lasting="the relayer's float still cannot be loaded; the view ages",
    ended="the relayer's float is loaded again",
)


class LiquidityRefused(IntentRequestError):
    """The relayer's float refuses the request: ``status`` of the answer, and the seconds
    of its ``Retry-After`` (None: none)."""

    status = 409
    retry_after: int | None = None


class InsufficientLiquidity(LiquidityRefused):
    """409 ``insufficient_liquidity``: the relayer cannot cover the amount now."""

    status = 409


class LiquidityUnknown(LiquidityRefused):
    """503 ``liquidity_unknown``: the float is missing or too old to decide on."""

    status = 503
    retry_after = RETRY_AFTER


@dataclass(frozen=True, slots=True)
class FloatReading:
    """The relayer's row of one (chain, token), as loaded."""

    chain: str
    token: str
    figures: Float
    age: float
    """Seconds since the row's ``as_of`` when it was loaded (the database's clock)."""
    as_of: float
    """The row's ``as_of``, Unix seconds by the database's clock."""


class FloatSource(Protocol):
    async def relayer_floats(self) -> list[FloatReading] | None:
        """The relayer's rows of every chain, or None while they cannot be read."""
        ...


@dataclass
class _Held:
    amount: int
    written_at: float | None = None
    """The intent's ``created_at`` (Unix seconds, database clock) once it is written."""


@dataclass
class _Entry:
    reading: FloatReading
    loaded_at: float
    """When the view loaded it (this process's monotonic clock)."""
    holds: list[_Held] = field(default_factory=list)


class Hold:
    """An amount a create holds against a float until it is written or given up."""

    def __init__(self, gate: LiquidityGate | None, key: tuple[str, str], held: _Held) -> None:
        self._gate, self._key, self._held = gate, key, held

    def written(self, row: IntentRow) -> None:
        """The intent is stored: keep holding until a reading counts it."""
        self._held.written_at = row.created_at.timestamp()

    def release(self) -> None:
        """Nothing was written: give the amount back."""
        if self._gate is not None:
            self._gate._release(self._key, self._held)

    def unknown(self) -> None:
        """The create was cancelled while its write went on (``IntentWriter.insert`` is
        shielded): it may be written now. Keep holding until a reading taken after now
        (the database's clock, as the view estimates it) would count it."""
        if self._gate is not None:
            self._held.written_at = self._gate._database_now(self._key)


class LiquidityGate:
    """The view of the relayer's float of one process, and the checks made against it."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._config = settings.liquidity
        self._clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._unloaded: Episodes[str] = Episodes(UNLOADED, clock=clock)

    @property
    def enabled(self) -> bool:
        return self._config.admission

    # --- the view -----------------------------------------------------------------------
    def load(self, readings: Sequence[FloatReading]) -> None:
        """Replace the view; the holds a reading now counts are dropped."""
        now = self._clock()
        entries: dict[tuple[str, str], _Entry] = {}
        for reading in readings:
            key = (reading.chain, reading.token.lower())
            old = self._entries.get(key)
            holds = [
                h
                for h in (old.holds if old is not None else [])
                if h.written_at is None or h.written_at + HOLD_MARGIN > reading.as_of
            ]
            entries[key] = _Entry(reading, now, holds)
        self._entries = entries

    async def follow(self, source: FloatSource, stop: asyncio.Event | None = None) -> None:
        """Load the view every ``view_refresh`` seconds until ``stop`` (or cancelled)."""
        stopped = stop or asyncio.Event()
        while not stopped.is_set():
            readings = await source.relayer_floats()
            if readings is None:
                emit(self._unloaded.seen("float"))
            else:
                emit(self._unloaded.ended("float"))
                self.load(readings)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopped.wait(), self._config.view_refresh)

    # --- checks -------------------------------------------------------------------------
    def cover(self, chain: str, token: str) -> int:
        """The most a new intent may ask of the relayer's ``token`` on ``chain`` now;
        :class:`LiquidityUnknown` if the float is missing or too old."""
        key = (chain, token.lower())
        entry = self._entries.get(key)
        age = None if entry is None else entry.reading.age + self._clock() - entry.loaded_at
        if entry is None or age is None or age > self._config.max_age:
            metrics.LIQUIDITY_REFUSALS.labels(chain, "unknown").inc()
            known = "never read" if age is None else f"read {round(age)} s ago"
            raise LiquidityUnknown(
                "liquidity_unknown",
                "destination_chain",
                f"the relayer's balance on {chain} is not known now ({known}; at most"
                f" {round(self._config.max_age)} s old is used); retry after Retry-After seconds",
            )
        held = sum(h.amount for h in entry.holds)
        figures = entry.reading.figures
        with_holds = Float(figures.balance, figures.reserved, figures.owed, figures.pending + held)
        return cover(with_holds, self._config.overcommit_bps)

    def check(self, chain: str, token: str, amount: int) -> None:
        """Raise unless ``amount`` of ``token`` can be asked of the relayer on ``chain``."""
        if not self.enabled:
            return
        if amount > self.cover(chain, token):
            metrics.LIQUIDITY_REFUSALS.labels(chain, "insufficient").inc()
            raise InsufficientLiquidity(
                "insufficient_liquidity",
                "amount",
                f"the relayer cannot cover {self._units(chain, token, amount)} on {chain}"
                " now; try a smaller amount, another destination, or later",
            )

    def hold(self, chain: str, token: str, amount: int) -> Hold:
        """:meth:`check`, then hold ``amount`` (in the same step)."""
        if not self.enabled:
            return Hold(None, (chain, token), _Held(0))
        self.check(chain, token, amount)
        key = (chain, token.lower())
        held = _Held(amount)
        self._entries[key].holds.append(held)
        return Hold(self, key, held)

    def covering(self, found: Sequence[Quote]) -> list[Quote]:
        """The quotes whose amount out the relayer can cover (each route's destination);
        :class:`LiquidityUnknown` if a destination's float is not known."""
        if not self.enabled:
            return list(found)
        return [
            q
            for q in found
            if q.amount_out <= self.cover(q.route.destination.name, q.route.token_out_address)
        ]

    def require(self, quote: Quote) -> None:
        """:meth:`check` of one quote's destination and amount out."""
        self.check(quote.route.destination.name, quote.route.token_out_address, quote.amount_out)

    def _database_now(self, key: tuple[str, str]) -> float:
        entry = self._entries.get(key)
        if entry is None:  # the hold belongs to no reading any more: nothing to keep
            return 0.0
        return entry.reading.as_of + entry.reading.age + self._clock() - entry.loaded_at

    def _release(self, key: tuple[str, str], held: _Held) -> None:
        entry = self._entries.get(key)
        if entry is not None and held in entry.holds:
            entry.holds.remove(held)

    def _units(self, chain: str, token: str, amount: int) -> str:
        config = self._settings.chains.get(chain)
        found = config.token(token) if config is not None else None
        if found is None:
            return f"{amount} base units of {token}"
        return f"{format_amount(amount, found.decimals)} {found.symbol}"


class AdmittingWriter(IntentWriter):
    """An intent writer that writes only what ``gate`` admits (``None``: everything)."""

    def __init__(
        self,
        store: IntentStore,
        keys: AddressSource,
        *,
        gate: LiquidityGate | None = None,
        max_batch: int = 128,
        max_in_flight: int = 1,
        max_waiting: int | None = None,
        acquire_timeout: float | None = None,
        max_pending: int | None = None,
    ) -> None:
        super().__init__(
            store,
            keys,
            max_batch=max_batch,
            max_in_flight=max_in_flight,
            max_waiting=max_waiting,
            acquire_timeout=acquire_timeout,
            max_pending=max_pending,
        )
        self._gate = gate

    async def insert(self, new: NewIntent) -> IntentRow | None:
        if self._gate is None:
            return await super().insert(new)
        hold = self._gate.hold(new.destination_chain, new.token_out, new.amount_out)
        try:
            row = await super().insert(new)
        except asyncio.CancelledError:
            hold.unknown()
            raise
        except BaseException:
            hold.release()
            raise
        if row is None:  # the client's Idempotency-Key was used: nothing new written
            hold.release()
        else:
            hold.written(row)
        return row
