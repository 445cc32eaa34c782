"""The chaos run's intentd: its config, one process per role, ``kill -9`` and restart.

Each role runs as ``intentd --config <run>/chaos.toml ROLE`` so that any one of them can
be killed alone: a poller and an executor per chain, the lifecycle, the webhooks
dispatcher and the API. The config points at the run's own anvil chains, its own
database and its own topic prefix; secrets (the HD mnemonic, the relayer and gas tank
keys) come from the environment and the key files of ``.local``, as for every local run.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIRMATIONS = 2
STOP_TIMEOUT = 40.0
"""Seconds the roles get to exit on SIGTERM (as deploy/'s supervisors give them)."""


def chain_toml(
    name: str,
    chain_id: int,
    urls: list[str],
    tokens: dict[str, str],
    infra: dict[str, str],
    *,
    rpc_timeout: float | None = None,
    eth_feed: str | None = None,
) -> str:
    """``urls``: the chain's ``rpc_urls`` (a fault run's proxies; failover in order);
    ``eth_feed``: the address of the ETH / USD feed on this chain (it then prices ETH on
    every chain of the run: they are all test networks)."""
    feed = (
        f', price_feed = {{ address = "{eth_feed}", heartbeat = 3600, min = "100",'
        ' max = "100000" }'
        if eth_feed
        else ""
    )
    listed = ",\n".join(
        f'  {{ address = "{address}", symbol = "{symbol}", name = "Test {symbol}", decimals = 6,'
        f' category = "stablecoin", min_sweep = "0.01" }}'
        for symbol, address in tokens.items()
    )
    timeout = f"\nrpc_timeout = {rpc_timeout}" if rpc_timeout is not None else ""
    return f"""
[chains.{name}]
chain_id = {chain_id}
network = "test"
l1_fee = "none"
rpc_urls = [{", ".join(f'"{url}"' for url in urls)}]{timeout}
confirmations = {CONFIRMATIONS}
poll_interval = 0.2
batch_size = 50
relayer = "{infra["INTENTD_RELAYER_ADDRESS"]}"
fee_account = "{infra["INTENTD_FEE_ACCOUNT_ADDRESS"]}"
native = {{ symbol = "ETH", name = "Ether", decimals = 18, category = "major"{feed} }}
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

[pricing]
refresh_interval = 1.0  # the ETH / USD feed the run moves is read every second
{chains}"""
    )


@dataclass
class Role:
    """One role process, restarted after each kill (and after it exits by itself)."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    kills: int = 0
    starts: int = 0
    killing: bool = False  # between our kill -9 and our restart: not an exit of its own


@dataclass(frozen=True)
class Exit:
    """A role that exited by itself (not killed by the run), restarted a second later."""

    role: str
    code: int
    at: float  # time.monotonic()
    last_lines: list[str]  # the last error or unstructured lines of its log


@dataclass
class Roles:
    config: Path
    env: dict[str, str]
    logs: Path
    roles: list[Role] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    stopped: bool = False

    def add(self, name: str, *argv: str) -> None:
        self.roles.append(Role(name, list(argv)))

    def start(self, role: Role) -> None:
        command = [sys.executable, "-m", "intentd", "--config", str(self.config), *role.argv]
        with self.log(role).open("ab") as out:
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
        role.process.wait(10)  # at once: SIGKILL is not handled
        role.kills += 1

    def pick(self, rng: random.Random, per_role: dict[str, int]) -> Role | None:
        """A role still owed kills (``per_role``: the kills each should get), at random."""
        owed = [r for r in self.roles if r.kills < per_role.get(r.name, 0)]
        return rng.choice(owed) if owed else None

    async def kill_and_restart(self, role: Role, pause: float) -> None:
        role.killing = True
        try:
            self.kill(role)
            await asyncio.sleep(pause)
            self.start(role)
        finally:
            role.killing = False

    async def supervise(self, on_exit: Callable[[Exit], None] | None = None) -> None:
        """Forever: restart a role that exited by itself one second later, as a process
        supervisor would, and record the exit (its status and last error lines)."""
        while True:
            await asyncio.sleep(0.5)
            for role in self.roles:
                process = role.process
                if role.killing or process is None or process.poll() is None:
                    continue
                code = process.returncode
                gone = Exit(role.name, code, time.monotonic(), last_lines(self.log(role)))
                self.exits.append(gone)
                print(f"  {role.name} exited with {code}; restarting", flush=True)
                if on_exit is not None:
                    on_exit(gone)
                role.killing = True
                try:
                    await asyncio.sleep(1)
                    self.start(role)
                finally:
                    role.killing = False

    def log(self, role: Role) -> Path:
        return self.logs / f"{role.name}.log"

    async def stop(self) -> dict[str, int | None]:
        """SIGTERM to every role; their exit statuses (0: a clean stop; None: still
        running after :data:`STOP_TIMEOUT`, then killed). Waits without blocking the
        event loop: the run's fault proxies live in it, and a role's last writes go
        through them."""
        self.stopped = True
        deadline = time.monotonic() + STOP_TIMEOUT
        running = [r for r in self.roles if r.process is not None]
        for role in running:
            if role.process is not None and role.process.poll() is None:
                role.process.terminate()
        while time.monotonic() < deadline:
            if all(r.process is None or r.process.poll() is not None for r in running):
                break
            await asyncio.sleep(0.1)
        codes: dict[str, int | None] = {}
        for role in running:
            assert role.process is not None
            codes[role.name] = role.process.poll()
            if codes[role.name] is None:
                role.process.kill()
                role.process.wait()
        return codes


def last_lines(log: Path, count: int = 3) -> list[str]:
    """The last ``count`` lines of ``log`` that are errors or not JSON (tracebacks)."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(handle.seek(0, os.SEEK_END) - 65536, 0))
            tail = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    picked = [line for line in tail if not line.startswith("{") or '"level": "error"' in line]
    return [line[:400] for line in picked[-count:]]
