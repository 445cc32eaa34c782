"""What the chaos run measures of each dependency fault burst.

For every burst (``bench/chaos/faults.py``):

- **events again**: once the dependency is back and no other burst is still on, the
  run creates and pays a *probe* intent (``exact``, USDC) and takes the seconds until
  it is FUNDED and that event is published to the broker (``Run.probe``: payment,
  block, confirmations, poller, lifecycle, outbox; about 3 s on healthy dependencies),
  and until both pollers have read past the head their chain had at that moment; the
  larger of the two ("never" if not within a minute).
- **exits**: the roles that exited by themselves from the burst's start until its
  measurement ended (``Roles.supervise`` restarts them a second later);
- **log lines**: the lines each role wrote from the burst's start until 3 s after
  events flowed again, by level: errors (``error``, ``critical``), warnings, and lines
  that are not JSON (raw tracebacks). Bursts that overlap count the same lines twice.
  More than :data:`NOISY_LINES` error and raw lines from one role in one burst fails
  the run (``Figures.noisy``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson

from bench.chaos.chains import Chain
from bench.chaos.faults import Dependencies
from bench.chaos.roles import Exit, Roles
from intentd.adapters.postgres import Pool

RECOVERY_LIMIT = 60.0
NOISY_LINES = 30
"""More error and raw lines than this from one role in one burst is one line per retry,
not the few an outage should give (first failure, periodic summary, recovery)."""
LEVELS = ("error", "warning", "raw")


@dataclass
class BurstRecord:
    cls: str
    seconds: float
    start: float  # time.monotonic()
    wall: datetime = field(default_factory=lambda: datetime.now(UTC))  # its start, UTC
    back: float | None = None  # when the dependency was back
    clear: float | None = None  # when no burst was on any more
    recovered: float | None = None  # seconds from ``clear`` until events flowed again
    published: float | None = None  # ... until the probe's intent_funded was published
    polled: float | None = None  # ... until both pollers read past the heads at ``clear``
    done: float | None = None  # when its measurement ended
    exits: list[Exit] = field(default_factory=list)
    lines: dict[str, Counter[str]] = field(default_factory=dict)  # role -> level -> lines


class Watch:
    """Runs the bursts and measures them; one at a time unless ``overlap``."""

    def __init__(
        self,
        pool: Pool,
        roles: Roles,
        chains: dict[str, Chain],
        probe: Callable[[], Awaitable[float | None]],
        *,
        overlap: bool = False,
    ) -> None:
        self.pool, self.roles, self.chains, self.probe = pool, roles, chains, probe
        self.records: list[BurstRecord] = []
        self._active = 0
        self._clear = asyncio.Event()  # no burst is on
        self._clear.set()
        self._one_at_a_time = asyncio.Lock()
        self._overlap = overlap

    async def burst(self, deps: Dependencies, cls: str, seconds: float) -> None:
        """Run one burst (after the previous one was measured, unless ``overlap``) and
        measure it."""
        if self._overlap:
            await self._burst(deps, cls, seconds)
            return
        async with self._one_at_a_time:
            await self._burst(deps, cls, seconds)

    async def _burst(self, deps: Dependencies, cls: str, seconds: float) -> None:
        record = BurstRecord(cls, seconds, time.monotonic())
        self.records.append(record)
        offsets = self._offsets()
        self._active += 1
        self._clear.clear()
        try:
            await deps.burst(cls, seconds)
        finally:
            self._active -= 1
            if not self._active:
                self._clear.set()
        record.back = time.monotonic()
        await self._clear.wait()
        record.clear = time.monotonic()
        record.published, record.polled = await self._flowing()
        if record.published is not None and record.polled is not None:
            record.recovered = max(record.published, record.polled)
        await asyncio.sleep(3)
        record.lines = self._lines_since(offsets)
        record.done = time.monotonic()

    def on_exit(self, gone: Exit) -> None:
        for record in self.records:
            if record.start <= gone.at and (record.done is None or gone.at <= record.done):
                record.exits.append(gone)

    async def _flowing(self) -> tuple[float | None, float | None]:
        """Seconds until a probe intent paid now is FUNDED and published, and until both
        pollers have read past the heads of now (None: not within a minute)."""
        probing = asyncio.create_task(self.probe())
        started = time.monotonic()
        heads = {c.name: await c.rpc.block_number() for c in self.chains.values()}
        polled = None
        while time.monotonic() - started < RECOVERY_LIMIT:
            cursors = {
                r["chain"]: r["block_number"]
                for r in await self.pool.fetch("SELECT chain, block_number FROM chain_cursors")
            }
            if all(cursors.get(n, -1) >= h for n, h in heads.items()):
                polled = time.monotonic() - started
                break
            await asyncio.sleep(0.2)
        return await probing, polled

    def _offsets(self) -> dict[str, int]:
        sizes = {}
        for role in self.roles.roles:
            try:
                sizes[role.name] = self.roles.log(role).stat().st_size
            except OSError:
                sizes[role.name] = 0
        return sizes

    def _lines_since(self, offsets: dict[str, int]) -> dict[str, Counter[str]]:
        counted: dict[str, Counter[str]] = {}
        for role in self.roles.roles:
            with self.roles.log(role).open("rb") as handle:
                handle.seek(offsets.get(role.name, 0))
                counted[role.name] = count_levels(handle.read().splitlines())
        return counted

    def report(self) -> list[str]:
        """Per fault class: bursts, events-again times, exits and log lines by role."""
        by_class: dict[str, list[BurstRecord]] = defaultdict(list)
        for record in self.records:
            by_class[record.cls].append(record)
        lines = []
        for cls, records in by_class.items():
            seconds = sum(r.seconds for r in records)
            times = [r.recovered for r in records if r.recovered is not None]
            flowing = (
                f"median {statistics.median(times):.1f} s, max {max(times):.1f} s" if times else "-"
            )
            missing = sum(1 for r in records if r.recovered is None)
            if missing:
                flowing += f", {missing} never within {RECOVERY_LIMIT:.0f} s"
            flowing += " (probe published " + _spread([r.published for r in records])
            flowing += ", polled " + _spread([r.polled for r in records]) + ")"
            exits = Counter(e.role for r in records for e in r.exits)
            total: dict[str, Counter[str]] = defaultdict(Counter)
            for record in records:
                for role, counted in record.lines.items():
                    total[role].update(counted)
            written = ", ".join(
                f"{role} {c['error']}/{c['warning']}/{c['raw']}"
                for role, c in sorted(total.items())
                if sum(c.values())
            )
            lines += [
                f"    {cls}: {len(records)} bursts, {seconds:.1f} s; events again {flowing}",
                f"      exits: {dict(exits) or 'none'}",
                f"      lines error/warning/raw: {written or 'none'}",
            ]
        return lines

    def noisy(self) -> list[str]:
        """The bursts in which a role wrote more than :data:`NOISY_LINES` error or raw
        lines (a traceback counts each of its lines)."""
        found = []
        for r in sorted(self.records, key=lambda r: r.start):
            for role, counted in sorted(r.lines.items()):
                if counted["error"] + counted["raw"] > NOISY_LINES:
                    found.append(
                        f"{r.wall:%H:%M:%S} {r.cls} {r.seconds:.1f} s: {role} wrote"
                        f" {counted['error']} error and {counted['raw']} raw lines"
                    )
        return found

    def timeline(self) -> list[str]:
        """One line per burst: its start (UTC, to match the roles' logs), class, length,
        events again, the roles that exited meanwhile."""
        lines = []
        for r in sorted(self.records, key=lambda r: r.start):
            again = f"{r.recovered:.1f} s" if r.recovered is not None else "never"
            exits = ", ".join(f"{e.role} ({e.code})" for e in r.exits) or "-"
            lines.append(
                f"    {r.wall:%H:%M:%S} {r.cls} {r.seconds:.1f} s; events again {again};"
                f" exits {exits}"
            )
        return lines

    def recoveries(self) -> dict[str, list[float | None]]:
        found: dict[str, list[float | None]] = defaultdict(list)
        for record in self.records:
            found[record.cls].append(record.recovered)
        return dict(found)


def _spread(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    shown = "/".join(f"{v:.1f}" for v in sorted(known)) or "-"
    return shown + (f" +{len(values) - len(known)} never" if len(known) < len(values) else "")


def count_levels(lines: list[bytes]) -> Counter[str]:
    """Lines by level: ``error`` (error, critical), ``warning``, ``raw`` (not JSON)."""
    counted: Counter[str] = Counter()
    for line in lines:
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            counted["raw"] += 1
            continue
        level = record.get("level") if isinstance(record, dict) else None
        if level in ("error", "critical", "exception"):
            counted["error"] += 1
        elif level == "warning":
            counted["warning"] += 1
    return counted
