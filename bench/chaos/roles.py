"""The chaos run's intentd: its config, one process per role, ``kill -9`` and restart.

Each role runs as ``intentd --config <run>/chaos.toml ROLE`` so that any one of them can
be killed alone: a poller and an executor per chain, the lifecycle, the webhooks
dispatcher and the API. The config points at the run's own anvil chains, its own
database and its own topic prefix; secrets (the HD mnemonic, the relayer and gas tank
keys) come from the environment and the key files of ``.local``, as for every local run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIRMATIONS = 2


def chain_toml(
    name: str, chain_id: int, url: str, tokens: dict[str, str], infra: dict[str, str]
) -> str:
    listed = ",\n".join(
        f'  {{ address = "{address}", symbol = "{symbol}", name = "Test {symbol}", decimals = 6,'
        f' category = "stablecoin", min_sweep = "0.01" }}'
        for symbol, address in tokens.items()
    )
    return f"""
[chains.{name}]
chain_id = {chain_id}
network = "test"
l1_fee = "none"
rpc_urls = ["{url}"]
confirmations = {CONFIRMATIONS}
poll_interval = 0.2
batch_size = 50
relayer = "{infra["INTENTD_RELAYER_ADDRESS"]}"
fee_account = "{infra["INTENTD_FEE_ACCOUNT_ADDRESS"]}"
native = {{ symbol = "ETH", name = "Ether", decimals = 18, category = "major" }}
tokens = [
{listed},
]
"""


def write_config(path: Path, database_url: str, infra: dict[str, str], chains: str) -> None:
    """``chains``: the ``[chains.X]`` sections (see :func:`chain_toml`)."""
    path.write_text(
        f"""environment = "test"

[database]
url = "{database_url}"

[kafka]
bootstrap_servers = "{infra["INTENTD_KAFKA_BOOTSTRAP"]}"

[intents]
min_expires_in = 1
expiry_grace_seconds = 5  # {CONFIRMATIONS} confirmations of 1 s blocks, polled every 0.2 s

[execution]
stuck_after = 10
retry_backoff = 1

[observability]
log_level = "info"
metrics_port = 0

[api]
host = "127.0.0.1"
port = 0

[fees]
app_fee_bps = "100"

[prices]
ETH = "3000"
{chains}"""
    )


@dataclass
class Role:
    """One role process, restarted after each kill."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    kills: int = 0
    starts: int = 0


@dataclass
class Roles:
    config: Path
    env: dict[str, str]
    logs: Path
    roles: list[Role] = field(default_factory=list)

    def add(self, name: str, *argv: str) -> None:
        self.roles.append(Role(name, list(argv)))

    def start(self, role: Role) -> None:
        command = [sys.executable, "-m", "intentd", "--config", str(self.config), *role.argv]
        with (self.logs / f"{role.name}.log").open("ab") as out:
            role.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=ROOT
            )
        role.starts += 1

    def start_all(self) -> None:
        for role in self.roles:
            self.start(role)

    def kill(self, role: Role) -> None:
        """``kill -9``: no cleanup of any kind; the restart is the caller's."""
        assert role.process is not None
        os.kill(role.process.pid, signal.SIGKILL)
        role.process.wait(10)
        role.kills += 1

    def pick(self, rng: random.Random, per_role: dict[str, int]) -> Role | None:
        """A role still owed kills (``per_role``: the kills each should get), at random."""
        owed = [r for r in self.roles if r.kills < per_role.get(r.name, 0)]
        return rng.choice(owed) if owed else None

    def check_alive(self) -> None:
        """Restart a role that died by itself (its exit is reported, not hidden)."""
        for role in self.roles:
            if role.process is not None and role.process.poll() is not None:
                print(
                    f"  {role.name} exited with {role.process.returncode}; restarting", flush=True
                )
                self.start(role)

    def stop(self) -> dict[str, int | None]:
        """SIGTERM to every role; their exit statuses (0: a clean stop)."""
        for role in self.roles:
            if role.process is not None and role.process.poll() is None:
                role.process.terminate()
        codes: dict[str, int | None] = {}
        for role in self.roles:
            if role.process is None:
                continue
            try:
                codes[role.name] = role.process.wait(60)
            except subprocess.TimeoutExpired:
                role.process.kill()
                codes[role.name] = None
        return codes
