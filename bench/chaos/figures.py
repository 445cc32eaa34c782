"""What a chaos run reports: its size, the chaos it made, its times and its mismatches."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Figures:
    deposits: int = 0
    intents: int = 0
    kills: dict[str, int] = field(default_factory=dict)
    reorgs: Counter[int] = field(default_factory=Counter)
    reincluded: int = 0
    wall: float = 0.0
    settle: float = 0.0
    unsettled: dict[str, int] = field(default_factory=dict)
    transactions: dict[str, int] = field(default_factory=dict)
    late_on_time: int = 0
    resent: int = 0
    mismatches: list[str] = field(default_factory=list)

    def report(self) -> str:
        lines = [
            f"chaos: {self.intents} intents, {self.deposits} deposits",
            f"  kills per role: {self.kills}",
            f"  reorgs by depth: {dict(sorted(self.reorgs.items()))}"
            f" ({self.reincluded} transactions re-included)",
            f"  wall time {self.wall:.1f} s, settle time {self.settle:.1f} s",
            f"  intentd transactions: {self.transactions}",
            f"  payments sent again (forgotten by the node): {self.resent}",
            f"  under_expiry intents whose on-time payment was refunded as late:"
            f" {self.late_on_time}",
            f"  unsettled: {self.unsettled or 'nothing'}",
            f"  mismatches: {len(self.mismatches)}",
        ]
        lines += [f"    {m}" for m in self.mismatches[:50]]
        return "\n".join(lines)
