"""What the benchmarks report of a series of timings: percentiles, in milliseconds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["figures", "latency", "percentile", "timed"]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` (nearest rank), 0.0 of none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def figures(spent: list[float]) -> dict[str, float]:
    """Mean, p50, p99 and max of ``spent`` (milliseconds, at least one), to the µs."""
    spent = sorted(spent)
    return {
        "mean_ms": round(statistics.fmean(spent), 3),
        "p50_ms": round(spent[len(spent) // 2], 3),
        "p99_ms": round(spent[min(len(spent) - 1, int(len(spent) * 0.99))], 3),
        "max_ms": round(spent[-1], 3),
    }


async def timed(rounds: int, call: Callable[[], Awaitable[Any]]) -> dict[str, float]:
    """:func:`figures` of ``rounds`` awaits of ``call()``, one after the other."""
    spent = []
    for _ in range(rounds):
        began = time.perf_counter()
        await call()
        spent.append((time.perf_counter() - began) * 1000)
    return figures(spent)


def latency(values: list[float]) -> dict[str, float]:
    """p50, p99 and max of ``values`` (milliseconds, any number), to 0.1 ms."""
    return {
        "p50_ms": round(percentile(values, 0.5), 1),
        "p99_ms": round(percentile(values, 0.99), 1),
        "max_ms": round(max(values, default=0.0), 1),
    }
