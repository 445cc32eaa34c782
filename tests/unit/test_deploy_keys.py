"""deploy/ follows least privilege: only the executor is given signing material."""

from __future__ import annotations

import re
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SIGNING = re.compile(
    r"hd[-_]mnemonic|HD_MNEMONIC|relayer[-_.]key|RELAYER_KEY|gas[-_]tank[-_.]key|GAS_TANK_KEY"
)


def _workloads() -> dict[str, str]:
    documents = (DEPLOY / "kubernetes" / "intentd.yaml").read_text().split("\n---\n")
    named = {}
    for document in documents:
        kind = re.search(r"^kind: (\w+)", document, re.MULTILINE)
        name = re.search(r"^  name: ([\w-]+)", document, re.MULTILINE)
        assert kind and name, document[:200]
        named[f"{kind.group(1)}/{name.group(1)}"] = document
    return named


def test_only_the_kubernetes_executors_mount_signing_material() -> None:
    workloads = _workloads()
    signing = {name for name, text in workloads.items() if SIGNING.search(_uncommented(text))}
    assert signing == {name for name in workloads if "execute" in name}
    assert signing  # the executor does get them
    api = workloads["Deployment/intentd-api"]
    assert "INTENTD_HD_XPUB_FILE" in api


def test_only_the_systemd_executor_loads_signing_material() -> None:
    units = {path.name: path.read_text() for path in (DEPLOY / "systemd").iterdir()}
    signing = {name for name, text in units.items() if SIGNING.search(_uncommented(text))}
    assert signing == {"intentd-execute@.service"}
    assert "INTENTD_HD_XPUB_FILE" in units["intentd-api.service"]


def _uncommented(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
