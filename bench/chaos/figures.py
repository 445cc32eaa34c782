"""What a chaos run reports: its size, the chaos it made, its times and its mismatches."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bench.chaos.roles import Exit


@dataclass
class Figures:
    deposits: int = 0
    intents: int = 0
    probes: int = 0  # intents created to time recoveries (counted in ``intents``)
    probe_baseline: float | None = None  # a probe's seconds before any fault
    kills: dict[str, int] = field(default_factory=dict)
    reorgs: Counter[int] = field(default_factory=Counter)
    reincluded: int = 0
    wall: float = 0.0
    settle: float = 0.0
    unsettled: dict[str, int] = field(default_factory=dict)
    transactions: dict[str, int] = field(default_factory=dict)
    late_on_time: int = 0
    resent: int = 0
    top_ups: int = 0  # payments of the shortfall of an ETH intent whose total was raised
    price_moves: list[str] = field(default_factory=list)  # "within 3012.50", "beyond 2730.00"
    revaluations: Counter[str] = field(default_factory=Counter)  # check.revalued's counts
    mismatches: list[str] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    """Roles that exited by themselves (not killed by the run); each was restarted."""
    stop_codes: dict[str, int | None] = field(default_factory=dict)
    """Roles whose exit status on the final SIGTERM was not 0 (None: not within 40 s)."""
    stop_seconds: float = 0.0
    faults: list[str] = field(default_factory=list)  # the fault report (bench/chaos/watch.py)
    timeline: list[str] = field(default_factory=list)  # one line per burst
    noisy: list[str] = field(default_factory=list)  # bursts a role logged one line per retry
    recoveries: dict[str, list[float | None]] = field(default_factory=dict)
    served: dict[str, int] = field(default_factory=dict)  # the RPC proxies' POSTs by answer

    @property
    def failed(self) -> bool:
        """Money or events wrong, a role that exited other than on SIGTERM, or one that
        logged an outage one line per retry."""
        return bool(self.mismatches or self.exits or self.stop_codes or self.noisy)

    def report(self) -> str:
        lines = [
            f"chaos: {self.intents} intents ({self.probes} probes), {self.deposits} deposits",
            f"  kills per role: {self.kills}",
            f"  reorgs by depth: {dict(sorted(self.reorgs.items()))}"
            f" ({self.reincluded} transactions re-included)",
            f"  wall time {self.wall:.1f} s, settle time {self.settle:.1f} s",
            f"  intentd transactions: {self.transactions}",
            f"  payments sent again (forgotten by the node): {self.resent}",
            f"  under_expiry intents whose on-time payment was refunded as late:"
            f" {self.late_on_time}",
            f"  ETH / USD moves: {', '.join(self.price_moves) or 'none'}",
            f"  ETH intents: {dict(sorted(self.revaluations.items()))};"
            f" top-ups of a raised total: {self.top_ups}",
        ]
        if self.faults:
            baseline = f"{self.probe_baseline:.1f} s" if self.probe_baseline else "never"
            lines.append(f"  dependency faults (a probe before any: {baseline}):")
            lines += self.faults
            lines.append("  bursts (start UTC):")
            lines += self.timeline
            lines.append(f"  RPC proxies, POSTs by answer: {dict(sorted(self.served.items()))}")
            lines.append(
                f"  bursts with more than 30 error/raw lines from a role: {len(self.noisy)}"
            )
            lines += [f"    {n}" for n in self.noisy[:20]]
        exits = Counter(e.role for e in self.exits)
        lines.append(f"  roles that exited by themselves (restarted): {dict(exits) or 'none'}")
        shown: Counter[str] = Counter()
        for gone in self.exits:
            shown[gone.role] += 1
            if shown[gone.role] <= 2:
                lines.append(f"    {gone.role} exited {gone.code}:")
                lines += [f"      {line}" for line in gone.last_lines]
        lines += [
            f"  exit statuses on SIGTERM other than 0 (None: still running after 40 s):"
            f" {self.stop_codes or 'none'}; all stopped in {self.stop_seconds:.1f} s",
            f"  unsettled: {self.unsettled or 'nothing'}",
            f"  mismatches: {len(self.mismatches)}",
        ]
        lines += [f"    {m}" for m in self.mismatches[:50]]
        return "\n".join(lines)
