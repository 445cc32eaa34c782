"""deploy/prometheus/alerts.yml: valid for Prometheus, unit-tested, true to the code and
to the docs (every alert docs/operations.md names has a rule and a runbook section)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import yaml
from tests.operator_kit import DEPLOY, ROOT, metric_names, tool, unknown_references

RULES = DEPLOY / "prometheus" / "alerts.yml"
RULE_TESTS = DEPLOY / "prometheus" / "alerts.test.yml"
RUNBOOK = ROOT / "docs" / "runbook.md"


def alerting_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("promtool"), *args], capture_output=True, text=True, check=False, timeout=60
    )


def test_promtool_accepts_the_rules() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerting_rules())} rules found" in result.stdout


def test_promtool_unit_tests_of_the_rules_pass() -> None:
    result = promtool("test", "rules", str(RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_is_shown_firing_by_a_unit_test() -> None:
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {
        check["alertname"]
        for case in cases
        for check in case.get("alert_rule_test", [])
        if check.get("exp_alerts")
    }
    assert {rule["alert"] for rule in alerting_rules()} <= fired


def test_rules_use_only_metrics_and_labels_intentd_defines() -> None:
    problems = {rule["alert"]: unknown_references(rule["expr"]) for rule in alerting_rules()}
    assert {alert: found for alert, found in problems.items() if found} == {}


def test_every_alert_docs_operations_names_has_a_rule() -> None:
    text = (ROOT / "docs" / "operations.md").read_text()
    paragraph = text[text.index("Alert on:") :].split("\n\n")[0]
    named = metric_names(paragraph)
    assert len(named) >= 7, paragraph
    used = set().union(*(metric_names(rule["expr"]) for rule in alerting_rules()))
    used |= {re.sub(r"_bucket$", "", name) for name in used}
    assert named - used == set()


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section() -> None:
    headings = {
        line.removeprefix("## ").strip().lower()
        for line in RUNBOOK.read_text().splitlines()
        if line.startswith("## ")
    }
    for rule in alerting_rules():
        name = rule["alert"]
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"], name
        assert rule["annotations"]["runbook"] == f"docs/runbook.md#{name.lower()}"
        assert name.lower() in headings, f"docs/runbook.md has no section ## {name}"
