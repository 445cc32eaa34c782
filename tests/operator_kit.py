"""What the operator's kit (deploy/) is checked against: the metrics intentd defines.

The series a scrape can show are derived from the metric objects in
``intentd.observability`` (the one place metrics are defined): a counter ``x`` shows
``x_total``, a histogram ``x`` shows ``x_bucket``, ``x_sum`` and ``x_count``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.metrics import MetricWrapperBase

from intentd import observability

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
# Labels Prometheus or Kubernetes service discovery put on every scraped series.
TARGET_LABELS = frozenset({"instance", "job", "pod", "namespace"})
_NAME = re.compile(r"\b(intentd_[a-z0-9_]+)\b")
_SELECTOR = re.compile(r"\b(intentd_[a-z0-9_]+)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\bby\s*\(([^)]*)\)")


@dataclass(frozen=True)
class Series:
    family: str
    kind: str
    labels: frozenset[str]


def defined_series() -> dict[str, Series]:
    """Every series name a scrape of intentd can show, with its family and labels."""
    found: dict[str, Series] = {}
    for value in vars(observability).values():
        if not isinstance(value, MetricWrapperBase):
            continue
        name, kind = value._name, value._type
        labels = frozenset(value._labelnames)
        if kind == "counter":
            found[f"{name}_total"] = Series(name, kind, labels)
        elif kind == "histogram":
            found[f"{name}_bucket"] = Series(name, kind, labels | {"le"})
            for suffix in ("_sum", "_count"):
                found[f"{name}{suffix}"] = Series(name, kind, labels)
        else:
            found[name] = Series(name, kind, labels)
    return found


def unknown_references(expr: str) -> list[str]:
    """What a PromQL expression names that intentd does not define (metric or label)."""
    series = defined_series()
    problems = [f"metric {n}" for n in _NAME.findall(expr) if n not in series]
    for name, matchers in _SELECTOR.findall(expr):
        known = series[name].labels if name in series else frozenset()
        problems += [
            f"label {label} of {name}"
            for label in _MATCHER.findall(matchers)
            if label not in known | TARGET_LABELS
        ]
    used = frozenset().union(*(series[n].labels for n in _NAME.findall(expr) if n in series))
    for grouping in _GROUPING.findall(expr):
        for label in filter(None, (part.strip() for part in grouping.split(","))):
            if label not in used | TARGET_LABELS:
                problems.append(f"grouping label {label}")
    return problems


def metric_names(text: str) -> set[str]:
    return set(_NAME.findall(text))


def tool(name: str) -> str:
    """The path of a tool the operator's-kit checks need; fails saying how to get it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is missing: run `make prometheus-tools` (Debian's prometheus package)",
            pytrace=False,
        )
    return path
