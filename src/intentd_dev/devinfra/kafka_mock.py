"""The Kafka dev broker from the outside: its control client, and starting and stopping it.

The broker is librdkafka's mock cluster run by `intentd_dev.devinfra.kafka_mock_server`.
It speaks the Kafka protocol, but topics cannot be created through the admin API:
create them with `create_topics` on the control address (``INTENTD_KAFKA_MOCK_CONTROL``).
"""

import json
import re
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from intentd_dev.devinfra import daemons
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout

COMPONENT: Final = "kafka"
PARTITIONS: Final = 4
MAX_PARTITIONS: Final = 1000
TOPICS: Final = (
    "intentd.deposits.BASE_TESTNET",
    "intentd.deposits.ARBITRUM_TESTNET",
    "intentd.intent-events",
    "intentd.dlq",
    "intentd.actions",
    "intentd.action-results",
)
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_SERVER_MODULE = "intentd_dev.devinfra.kafka_mock_server"
_SERVER_MARK = "devinfra.kafka_mock_server"
"""What a broker's command line contains: also matches one started as
``intentd.devinfra.kafka_mock_server``, before the dev tooling left the product package."""
_START_TIMEOUT = 15.0


class KafkaMockError(Exception):
    """The control endpoint refused a command or could not be reached."""


def valid_topic_name(name: str) -> bool:
    """Kafka's rule: 1 to 249 of ASCII letters, digits, '.', '_' and '-', not '.' or '..'."""
    return _TOPIC_NAME.fullmatch(name) is not None and name not in {".", ".."}


def create_topics(control_addr: str, topics: Sequence[str], partitions: int = PARTITIONS) -> None:
    """Create `topics` on the dev broker, each with `partitions` partitions.

    Idempotent: a topic that already exists with the same partition count is fine.
    Raises `KafkaMockError` naming the topic if the broker refuses one (bad name,
    different partition count) and `OSError` if the endpoint cannot be reached.
    """
    for topic in topics:
        if not valid_topic_name(topic):
            raise KafkaMockError(f"invalid topic name {topic!r}")
    replies = _exchange(control_addr, [f"create {topic} {partitions}" for topic in topics])
    for topic, reply in zip(topics, replies, strict=True):
        if reply != "ok":
            raise KafkaMockError(f"create {topic}: {reply.removeprefix('error ')}")


def set_broker_down(control_addr: str, down: bool = True) -> None:
    """Cut the broker's connections and refuse new ones (``down``), or serve again.

    For outage tests on a broker of their own: the dev stack's broker is shared."""
    [reply] = _exchange(control_addr, ["down" if down else "up"])
    if reply != "ok":
        raise KafkaMockError(f"{'down' if down else 'up'}: {reply.removeprefix('error ')}")


def ping(control_addr: str, timeout: float = 2.0) -> bool:
    """True if the control endpoint at `control_addr` answers."""
    try:
        return _exchange(control_addr, ["ping"], timeout) == ["ok"]
    except OSError:
        return False


def _exchange(control_addr: str, commands: Sequence[str], timeout: float = 10.0) -> list[str]:
    host, _, port = control_addr.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall("".join(f"{command}\n" for command in commands).encode())
        sock.shutdown(socket.SHUT_WR)
        with sock.makefile("r", encoding="utf-8", newline="\n") as replies:
            lines = [line.rstrip("\n") for line in replies]
    if len(lines) != len(commands):
        raise KafkaMockError(f"{control_addr} answered {len(lines)} of {len(commands)} commands")
    return lines


@dataclass(frozen=True)
class BrokerState:
    """A running dev broker, as recorded in ``.local/run/kafka.json``."""

    pid: int
    bootstrap: str
    control: str


def running_broker(layout: Layout) -> BrokerState | None:
    """The recorded broker if its process is alive and its control endpoint answers."""
    state = _read_state(layout.state(COMPONENT))
    if state is None or daemons.running_pid(layout.pidfile(COMPONENT), _SERVER_MARK) is None:
        return None
    return state if ping(state.control) else None


def start_broker(layout: Layout) -> BrokerState:
    """Start the dev broker with `TOPICS` pre-created; returns once it is ready."""
    state_file, log = layout.state(COMPONENT), layout.log(COMPONENT)
    daemons.stop(layout.pidfile(COMPONENT), _SERVER_MARK)  # one that no longer answers
    state_file.unlink(missing_ok=True)
    argv = [sys.executable, "-m", _SERVER_MODULE, "--state-file", str(state_file)]
    argv += ["--partitions", str(PARTITIONS), *TOPICS]
    spawned = daemons.spawn(argv, log=log, pidfile=layout.pidfile(COMPONENT))
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        status = spawned.exit_status()
        if status is not None:
            raise InfraError(COMPONENT, f"the mock broker exited with status {status}", log)
        state = _read_state(state_file)
        if state is not None and state.pid == spawned.pid and ping(state.control):
            return state
        time.sleep(0.05)
    daemons.terminate(spawned.pid, _SERVER_MARK)
    raise InfraError(COMPONENT, f"the mock broker was not ready after {_START_TIMEOUT:.0f}s", log)


def stop_broker(layout: Layout) -> bool:
    """Stop the dev broker if it runs; True if it did."""
    stopped = daemons.stop(layout.pidfile(COMPONENT), _SERVER_MARK)
    layout.state(COMPONENT).unlink(missing_ok=True)
    return stopped


def _read_state(path: Path) -> BrokerState | None:
    try:
        raw = json.loads(path.read_text())
        return BrokerState(int(raw["pid"]), str(raw["bootstrap"]), str(raw["control"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None  # absent, or half-written by a broker that died: not running
