"""The Kafka dev broker: librdkafka's mock cluster plus a line-protocol control endpoint.

Run as ``python -m intentd_dev.devinfra.kafka_mock_server --state-file F [TOPIC ...]``.
It pre-creates the given topics, listens for control connections on a free port of
127.0.0.1, and only then writes `F` (JSON: pid, bootstrap, control), so a reader of
the file knows the broker is ready. SIGTERM or SIGINT destroys the cluster, removes
the state file and exits 0.

Control protocol, one command per line, one reply line each (see `kafka_mock` for
the client)::

    ping                          -> ok
    create <topic> <partitions>   -> ok | error <reason>
    down                          -> ok | error <reason>
    up                            -> ok | error <reason>

``down`` cuts every client connection of the broker and refuses new ones (a broker
that went away: the dependency-outage tests); ``up`` serves again. Topics and records
are kept.
"""

import argparse
import asyncio
import json
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path

from intentd_dev.devinfra.kafka_mock import MAX_PARTITIONS, valid_topic_name
from intentd_dev.devinfra.librdkafka import ERR_NO_ERROR, ERR_TOPIC_ALREADY_EXISTS, MockCluster

_MAX_LINE = 4096


class Broker:
    """The mock cluster and the topics created on it through this process."""

    def __init__(self, cluster: MockCluster) -> None:
        self._cluster = cluster
        self._topics: dict[str, int] = {}

    def create(self, topic: str, partitions: int) -> str | None:
        """Create `topic`; None on success (also when it exists), else the reason."""
        if not valid_topic_name(topic):
            return f"invalid topic name {topic!r}"
        if not 1 <= partitions <= MAX_PARTITIONS:
            return f"partitions must be 1..{MAX_PARTITIONS}, not {partitions}"
        known = self._topics.get(topic)
        if known is not None:
            return None if known == partitions else f"{topic} exists with {known} partitions"
        code = self._cluster.create_topic(topic, partitions)
        if code not in (ERR_NO_ERROR, ERR_TOPIC_ALREADY_EXISTS):
            return self._cluster.error_text(code)
        self._topics[topic] = partitions
        return None

    def _answer(self, code: int) -> str:
        return "ok" if code == ERR_NO_ERROR else f"error {self._cluster.error_text(code)}"

    def handle(self, line: str) -> str:
        """The reply (without newline) to one command line."""
        words = line.split()
        match words:
            case ["ping"]:
                return "ok"
            case ["create", topic, partitions] if partitions.isdigit():
                reason = self.create(topic, int(partitions))
                return "ok" if reason is None else f"error {reason}"
            case ["create", *_]:
                return "error usage: create <topic> <partitions>"
            case ["down"]:
                return self._answer(self._cluster.set_broker_down(1))
            case ["up"]:
                return self._answer(self._cluster.set_broker_up(1))
            case _:
                return f"error unknown command {line.strip()[:80]!r}"


async def _serve_connection(
    broker: Broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while line := await reader.readline():
            writer.write(broker.handle(line.decode(errors="replace")).encode() + b"\n")
            await writer.drain()
    except (ValueError, ConnectionError):
        pass  # an over-long line or a peer that went away: just drop the connection
    finally:
        writer.close()


def _write_state(path: Path, state: dict[str, int | str]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state) + "\n")
    tmp.replace(path)


async def serve(broker: Broker, on_ready: Callable[[str], None]) -> None:
    """Serve control connections on a free port until SIGTERM or SIGINT.

    `on_ready` receives the control address (``127.0.0.1:<port>``) once it accepts.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    server = await asyncio.start_server(
        lambda r, w: _serve_connection(broker, r, w), "127.0.0.1", 0, limit=_MAX_LINE
    )
    async with server:
        host, port = server.sockets[0].getsockname()[:2]
        on_ready(f"{host}:{port}")
        await stop.wait()


def run(state_file: Path, topics: Sequence[str], partitions: int) -> None:
    """Run the broker with `topics` pre-created until SIGTERM or SIGINT."""
    cluster = MockCluster(brokers=1)
    try:
        # Like the group.initial.rebalance.delay.ms=0 of dev Kafka setups: a lone
        # consumer joins its group at once instead of after the mock's default 3 s.
        cluster.set_initial_rebalance_delay(0)
        broker = Broker(cluster)
        for topic in topics:
            reason = broker.create(topic, partitions)
            if reason is not None:
                raise SystemExit(f"kafka mock: cannot create {topic}: {reason}")
        bootstrap = cluster.bootstrap_servers

        def ready(control: str) -> None:
            state: dict[str, int | str] = {"pid": os.getpid(), "bootstrap": bootstrap}
            state["control"] = control
            _write_state(state_file, state)
            print(f"kafka mock: bootstrap {bootstrap}, control {control}", flush=True)

        asyncio.run(serve(broker, ready))
        print("kafka mock: stopping", flush=True)
    finally:
        state_file.unlink(missing_ok=True)
        cluster.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m intentd_dev.devinfra.kafka_mock_server")
    parser.add_argument("--state-file", type=Path, required=True)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("topics", nargs="*")
    args = parser.parse_args(argv)
    run(args.state_file, args.topics, args.partitions)


if __name__ == "__main__":
    main()
