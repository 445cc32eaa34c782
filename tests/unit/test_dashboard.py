"""deploy/grafana/intentd.json: a valid dashboard whose every query parses as PromQL
(promtool) and names only metrics and labels intentd defines, covering the golden
signals of each role."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from tests.operator_kit import DEPLOY, defined_series, metric_names, tool, unknown_references

DASHBOARD = DEPLOY / "grafana" / "intentd.json"
_LEGEND_LABEL = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def graphs() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries() -> list[str]:
    return [target["expr"] for panel in graphs() for target in panel["targets"]]


def as_promql(expr: str) -> str:
    """A dashboard query as Prometheus sees it (Grafana fills in its variables)."""
    return expr.replace("$__rate_interval", "5m")


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    board = dashboard()
    assert board["uid"] == "intentd" and board["title"] and board["schemaVersion"] >= 36
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in graphs():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"


def test_every_query_names_only_metrics_and_labels_intentd_defines() -> None:
    problems = {expr: unknown_references(as_promql(expr)) for expr in queries()}
    assert {expr: found for expr, found in problems.items() if found} == {}


def test_every_legend_names_a_label_its_queries_keep() -> None:
    series = defined_series()
    for panel in graphs():
        for target in panel["targets"]:
            kept = set().union(*(series[n].labels for n in metric_names(target["expr"])))
            for label in _LEGEND_LABEL.findall(target["legendFormat"]):
                assert label in kept, f"{panel['title']}: legend {{{{{label}}}}}"


def test_every_query_parses_as_promql(tmp_path: Path) -> None:
    rules = [
        {"record": f"dashboard:query_{n}", "expr": as_promql(expr)}
        for n, expr in enumerate(queries())
    ]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(
        [tool("promtool"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_golden_signals_of_each_role_are_on_it() -> None:
    shown = set().union(*(metric_names(expr) for expr in queries()))
    assert {
        "intentd_blocks_behind_head",  # pollers
        "intentd_rpc_errors_total",
        "intentd_deposit_to_funded_seconds_bucket",  # lifecycle
        "intentd_funded_to_completed_seconds_bucket",
        "intentd_outbox_backlog",
        "intentd_dead_letters_total",
        "intentd_action_outcomes_total",  # executors
        "intentd_relayer_free",  # the relayer's float, and the gas tank
        "intentd_prefills_short_total",
        "intentd_gas_tank_balance",
        "intentd_api_requests_total",  # API
        "intentd_api_request_seconds_bucket",
        "intentd_api_requests_in_flight",
        "intentd_webhook_pending",  # webhooks
        "intentd_webhook_oldest_pending_seconds",
        "intentd_webhook_attempts_total",
        "intentd_webhook_attempt_seconds_bucket",
        "intentd_webhook_disabled_endpoints",
    } <= shown
