"""deploy/kubernetes and deploy/systemd, checked the way a cluster and systemd would.

Kubernetes: every resource validates against the Kubernetes schemas that
``kubernetes-validate`` ships (offline, strict: unknown fields are errors), for the
oldest and the newest version we claim; every workload is probed, has resources, a
disruption budget and a network policy that lets in what it serves. systemd:
``systemd-analyze verify`` of every unit, in a scratch root that has the binary the
units start, must print nothing. Both give a process the time a stop may take
(``process.drain_seconds`` + ``runtime.STOP_MARGIN``) before SIGKILL.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_validate import utils as kubernetes_schemas
from tests.operator_kit import DEPLOY, ROOT, tool

from intentd.runtime import DRAIN_SECONDS, STOP_MARGIN

KUBERNETES = DEPLOY / "kubernetes"
SYSTEMD = DEPLOY / "systemd"
KUBERNETES_VERSIONS = ("1.30", kubernetes_schemas.latest_version())
WORKLOADS = {"Deployment", "StatefulSet"}


def resources() -> list[dict[str, Any]]:
    found = []
    for path in sorted(KUBERNETES.glob("*.yaml")):
        found += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def of_kind(*kinds: str) -> list[dict[str, Any]]:
    return [r for r in resources() if r["kind"] in kinds]


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}, "only matchLabels selectors are checked"
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_kubernetes_manifests_match_the_schemas(version: str) -> None:
    checked = []
    for resource in resources():
        name = f"{resource['kind']}/{resource['metadata']['name']}"
        try:
            kubernetes_schemas.validate(resource, version, strict=True)
        except kubernetes_schemas.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{name} against {version}: {path}: {exc.message}")
        checked.append(name)
    assert len(checked) >= 14  # workloads, the migrate job, budgets, network policies


def test_the_schema_check_rejects_an_unknown_field() -> None:
    [deployment] = [d for d in of_kind("Deployment") if d["metadata"]["name"] == "intentd-api"]
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_schemas.ValidationError):
        kubernetes_schemas.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


@pytest.mark.parametrize("workload", of_kind(*WORKLOADS), ids=lambda w: w["metadata"]["name"])
def test_each_workload_is_probed_sized_budgeted_and_isolated(workload: dict[str, Any]) -> None:
    pod = workload["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert selects(workload["spec"]["selector"], labels)
    [container] = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(pod["metadata"]["annotations"]["prometheus.io/port"]) == ports["metrics"]

    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    if labels["role"] != "execute":  # a standby executor is never ready (see the manifest)
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    assert {"cpu", "memory"} <= set(requests) and "memory" in limits

    [budget] = [b for b in of_kind("PodDisruptionBudget") if selects(b["spec"]["selector"], labels)]
    if "minAvailable" in budget["spec"]:  # else a drain could never evict one
        assert budget["spec"]["minAvailable"] < workload["spec"]["replicas"]
    others = [w for w in of_kind(*WORKLOADS) if w is not workload]
    assert not any(
        selects(budget["spec"]["selector"], w["spec"]["template"]["metadata"]["labels"])
        and w["metadata"]["name"] != workload["metadata"]["name"]
        for w in others
    )

    [policy] = [p for p in of_kind("NetworkPolicy") if selects(p["spec"]["podSelector"], labels)]
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    allowed_in = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert allowed_in == set(ports)  # what it serves, and nothing else
    allowed_out = {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert {53, 5432} <= allowed_out  # DNS and PostgreSQL, which every role uses


def test_deploy_yaml_passes_yamllint() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "yamllint", "-s", "-c", str(ROOT / ".yamllint.yaml"), str(DEPLOY)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def systemd_verify(units: Path, names: list[str], scratch: Path) -> str:
    """``systemd-analyze verify`` of ``names`` (units in ``units``) in a scratch root
    holding the system's own units and a stand-in for /opt/intentd/bin/intentd."""
    binary = scratch / "opt/intentd/bin/intentd"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    shutil.copytree("/lib/systemd/system", scratch / "usr/lib/systemd/system", symlinks=True)
    shutil.copytree(units, scratch / "etc/systemd/system", dirs_exist_ok=True)
    result = subprocess.run(
        [tool("systemd-analyze"), "verify", f"--root={scratch}", "--man=no", *names],
        capture_output=True,
        text=True,
        check=False,
        cwd=scratch / "etc/systemd/system",
        timeout=60,
    )
    return f"exit {result.returncode}: {result.stdout}{result.stderr}".strip()


def unit_names() -> list[str]:
    """Every unit of deploy/systemd; templates as an instance (``@BASE``)."""
    return [path.name.replace("@.", "@BASE.") for path in sorted(SYSTEMD.glob("*.service"))]


def test_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    names = unit_names()
    assert {n.split("@")[0].removesuffix(".service") for n in names} == {
        "intentd-api",
        "intentd-execute",
        "intentd-lifecycle",
        "intentd-poll",
        "intentd-webhooks",
    }
    assert systemd_verify(SYSTEMD, names, tmp_path) == "exit 0:"


def test_systemd_analyze_verify_reports_a_broken_unit(tmp_path: Path) -> None:
    units = tmp_path / "units"
    shutil.copytree(SYSTEMD, units)
    unit = units / "intentd-lifecycle.service"
    unit.write_text(unit.read_text().replace("ProtectSystem=strict", "ProtectSytem=strict"))
    report = systemd_verify(units, ["intentd-lifecycle.service"], tmp_path / "root")
    assert "Unknown key 'ProtectSytem'" in report


STOP_DEADLINE = DRAIN_SECONDS + STOP_MARGIN  # docs/operations.md, Stopping


@pytest.mark.parametrize("workload", of_kind(*WORKLOADS), ids=lambda w: str(w["metadata"]["name"]))
def test_each_workload_is_given_the_time_a_stop_takes(workload: dict[str, Any]) -> None:
    grace = workload["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
    assert grace > STOP_DEADLINE, f"SIGKILL before a stop can end ({STOP_DEADLINE} s)"


@pytest.mark.parametrize("unit", sorted(SYSTEMD.glob("*.service")), ids=lambda p: p.name)
def test_each_unit_is_given_the_time_a_stop_takes(unit: Path) -> None:
    settings = dict(line.split("=", 1) for line in unit.read_text().splitlines() if "=" in line)
    assert settings.get("KillSignal", "SIGTERM") == "SIGTERM"
    assert float(settings["TimeoutStopSec"]) > STOP_DEADLINE
