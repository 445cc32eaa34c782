"""Every role rides out outages of PostgreSQL and of the brokers, as a user runs it.

The daemons run as separate processes (``poll``, ``execute`` of both chains,
``lifecycle``, ``webhooks``; and ``run``, which holds them all), PostgreSQL behind a
fault proxy, Kafka a broker of the test's own that it takes down. Intents are paid on
chain while a dependency is away; for each outage (PostgreSQL cut twice and stalled
once; the brokers cut, and away at start-up):

- each daemon stays up (the same process throughout) and its ``/readyz`` answers 503
  during the outage and 200 after it;
- every payment is credited exactly once afterwards, and every intent reaches its end
  (COMPLETED, or REFUNDED with its ``intent_refunded``): no action result is lost;
- the logs hold a few lines per outage (no traceback, no line per retry);
- SIGTERM afterwards exits 0.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.outage_support import (
    Daemon,
    PrivateBroker,
    Readiness,
    private_broker,
)
from tests.sigterm_support import (
    DESTINATION,
    SOURCE,
    UNIT,
    Payer,
    spawn,
    terminate,
)
from tests.support import TopicReader, daemon_env, json_values
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port
from intentd_dev.fault_proxy import proxy_for, through_proxy

pytestmark = pytest.mark.e2e

WEBHOOK_KEY = "11" * 32
ROLES: dict[str, list[str]] = {
    "poll": ["poll", "--chain", SOURCE],
    "execute-source": ["execute", "--chain", SOURCE],
    "execute-destination": ["execute", "--chain", DESTINATION],
    "lifecycle": ["lifecycle"],
    "webhooks": ["webhooks"],
}
WARNINGS_PER_OUTAGE = 5
"""Warning and error lines a daemon may write per outage of under 30 s: the first line
of the outage, and what its libraries say in the moment before the probe confirms it
(each kind of line at most once in 30 s: three of aiokafka's on a broker cut). The old
code wrote 920 error lines in 22 s of a broker cut, and a traceback per retry."""


def env_for(settings: Settings, **extra: str) -> dict[str, str]:
    return daemon_env(
        settings,
        INTENTD_WEBHOOK_KEY=WEBHOOK_KEY,
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
        INTENTD__PROCESS__DRAIN_SECONDS="5",
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
        **extra,
    )


def start(roles: dict[str, list[str]], env: dict[str, str], directory: Path) -> list[Daemon]:
    daemons = []
    for name, args in roles.items():
        port = free_port()
        log = directory / f"{name}.log"
        process = spawn(
            args, {**env, "INTENTD__OBSERVABILITY__METRICS_PORT": str(port)}, log,
            secrets.token_hex(6),
        )  # fmt: skip
        daemons.append(Daemon(name, process, port, log))
    return daemons


class Intents:
    """Intents of the test, created with the CLI and paid on chain by one payer."""

    def __init__(self, env: dict[str, str], payer: Payer) -> None:
        self.env = env
        self.payer = payer
        self.paid: dict[str, int] = {}  # tx hash: intent id
        self.amounts: dict[int, int] = {}  # intent id: base units paid
        self.completing: list[int] = []  # paid in full: COMPLETED at the end
        self.refunding: list[int] = []  # paid in part, expiring: REFUNDED at the end

    def create(self, *, expires_in: int | None = None) -> dict[str, Any]:
        who = self.payer_address
        args = ["intents", "create", "--source-chain", SOURCE, "--destination-chain",
                DESTINATION, "--token-in", self.payer_token, "--amount", "1",
                "--recipient", who, "--refund-address", who]  # fmt: skip
        if expires_in is not None:
            args += ["--expires-in", str(expires_in)]
        return cli(self.env, *args)

    @property
    def payer_token(self) -> str:
        return self.env["TEST_USDC"]

    @property
    def payer_address(self) -> str:
        return self.env["TEST_PAYEE"]

    async def pay(self, intent: dict[str, Any], units: int) -> None:
        tx = await asyncio.to_thread(self.payer.pay, intent["intent_address"], units)
        self.paid[tx] = intent["id"]
        self.amounts[intent["id"]] = self.amounts.get(intent["id"], 0) + units


async def outage(
    name: str,
    *,
    begin: Callable[[], Awaitable[None]],
    end: Callable[[], Awaitable[None]],
    seconds: float,
    intents: Intents,
    readiness: Readiness,
    noticed_by: tuple[str, ...] | None = None,
) -> tuple[float, float]:
    """Pay two intents while a dependency is away for ``seconds`` and until each daemon
    of ``noticed_by`` (all, by default) has answered 503 (a daemon on a loaded machine
    may take longer to notice than the outage lasts); (start, end) times."""
    full, part = intents.create(), intents.create(expires_in=40)
    intents.completing.append(full["id"])
    intents.refunding.append(part["id"])
    started = time.monotonic()
    await begin()
    await intents.pay(full, UNIT)
    await intents.pay(part, UNIT // 2)
    await asyncio.sleep(max(0.0, started + seconds - time.monotonic()))
    await all_answer(readiness, 503, noticed_by or readiness.names, since=started)
    await end()
    ended = time.monotonic()
    print(f"  {name}: {ended - started:.1f} s")
    await readiness.all_ready(within=60)
    print(f"  {name}: every daemon ready {time.monotonic() - ended:.1f} s after it ended")
    return started, ended


async def settled(pool: Pool, intents: Intents, within: float = 180.0) -> None:
    """Until every intent reached its end (or fail, saying where each is)."""
    ends = {i: "COMPLETED" for i in intents.completing}
    ends |= {i: "REFUNDED" for i in intents.refunding}
    deadline = time.monotonic() + within
    while True:
        rows = await pool.fetch(
            "SELECT id, status FROM intents WHERE id = ANY($1::bigint[])", list(ends)
        )
        status = {r["id"]: r["status"] for r in rows}
        if all(status.get(i) == end for i, end in ends.items()):
            return
        assert time.monotonic() < deadline, f"not settled: {status} (expected {ends})"
        await asyncio.sleep(0.5)


async def assert_each_payment_credited_once(pool: Pool, intents: Intents) -> None:
    rows = await pool.fetch(
        "SELECT tx_hash, intent_id, amount, disposition FROM deposits WHERE chain = $1", SOURCE
    )
    by_tx: dict[str, list[Any]] = {}
    for row in rows:
        by_tx.setdefault(row["tx_hash"].lower(), []).append(row)
    for tx, intent in intents.paid.items():
        found = by_tx.get(tx.lower(), [])
        assert len(found) == 1, f"payment {tx} to intent {intent} recorded {len(found)} times"
        assert found[0]["intent_id"] == intent and found[0]["disposition"] == "credited"
    received = {
        r["id"]: int(r["received"])
        for r in await pool.fetch(
            "SELECT id, received FROM intents WHERE id = ANY($1::bigint[])", list(intents.amounts)
        )
    }
    assert received == intents.amounts


async def assert_each_event_once(pool: Pool, intents: Intents) -> None:
    rows = await pool.fetch(
        "SELECT intent_id, type, count(*) AS n FROM intent_events"
        " WHERE intent_id = ANY($1::bigint[]) GROUP BY intent_id, type",
        [*intents.completing, *intents.refunding],
    )
    events = {(r["intent_id"], r["type"]): r["n"] for r in rows}
    for intent in intents.completing:
        for kind in ("intent_funded", "intent_initiated", "intent_completed"):
            assert events.get((intent, kind)) == 1, (intent, kind, events)
    for intent in intents.refunding:
        for kind in ("intent_expired", "intent_refunded"):
            assert events.get((intent, kind), 0) <= 1, (intent, kind, events)
        assert events.get((intent, "intent_refunded")) == 1, (intent, events)


def assert_quiet(daemons: list[Daemon], outages: int) -> None:
    """No traceback, no line per retry: a few warnings per outage."""
    for daemon in daemons:
        lines = daemon.lines()
        text = daemon.log.read_text()
        assert "Traceback" not in text, f"{daemon.name}\n{text[-4000:]}"
        loud = [line for line in lines if line.get("level") in ("warning", "error")]
        print(f"  {daemon.name}: {len(lines)} lines, {len(loud)} warnings or errors")
        traced = [line.get("event") for line in lines if "exception" in line]
        assert not traced, f"{daemon.name} logged tracebacks: {traced}"
        assert len(loud) <= WARNINGS_PER_OUTAGE * outages, (
            daemon.name,
            [(line.get("event"), line.get("logger")) for line in loud],
        )


def assert_not_ready_during(
    readiness: Readiness, daemons: list[Daemon], windows: list[tuple[float, float]]
) -> None:
    for start, end in windows:
        for daemon in daemons:
            seen = readiness.between(daemon.name, start, end + 2.0)
            assert 503 in seen, f"{daemon.name} never said 503 in {end - start:.0f} s: {seen}"


async def stop_all(daemons: list[Daemon]) -> None:
    results = await asyncio.gather(*(terminate(d.process, 30) for d in daemons))
    for daemon, (code, seconds) in zip(daemons, results, strict=True):
        print(f"  {daemon.name}: SIGTERM, exit {code} after {seconds:.1f} s")
        assert code == 0, f"{daemon.name} exited {code}\n{daemon.log.read_text()[-4000:]}"


def payer_env(env: dict[str, str], infra: dict[str, str], payer: Payer) -> dict[str, str]:
    return {**env, "TEST_USDC": infra[f"INTENTD_{SOURCE}_USDC"], "TEST_PAYEE": payer.address}


@pytest.mark.timeout(480)
async def test_every_role_rides_out_postgresql_cut_twice_and_stalled_once(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    direct = env_for(settings)
    funder = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    usdc = infra[f"INTENTD_{SOURCE}_USDC"]
    payer = await asyncio.to_thread(
        Payer, infra[f"INTENTD_{SOURCE}_RPC_URL"], funder, usdc, 20 * UNIT
    )
    intents = Intents(payer_env(direct, infra, payer), payer)
    async with proxy_for(settings.database.url.get_secret_value(), 5432) as proxy:
        proxied = {
            **direct,
            "INTENTD__DATABASE__URL": through_proxy(
                settings.database.url.get_secret_value(), proxy
            ),
        }
        daemons = start(ROLES, proxied, tmp_path)
        pids = {d.name: d.process.pid for d in daemons}
        try:
            async with Readiness(daemons) as readiness:
                await readiness.all_ready(within=90)

                async def stall() -> None:
                    proxy.stall()

                each = functools.partial(
                    outage, end=proxy.restore, intents=intents, readiness=readiness
                )
                windows = [
                    await each("postgresql cut", begin=proxy.cut, seconds=8),
                    await each("postgresql cut again", begin=proxy.cut, seconds=8),
                    await each("postgresql stalled", begin=stall, seconds=12),
                ]
                await settled(pool, intents)
                assert_not_ready_during(readiness, daemons, windows)
            assert {d.name: d.process.pid for d in daemons if d.alive} == pids  # never restarted
        finally:
            await stop_all(daemons)
    await assert_each_payment_credited_once(pool, intents)
    await assert_each_event_once(pool, intents)
    assert_quiet(daemons, outages=3)


USES_KAFKA = ("poll", "lifecycle", "webhooks")
"""The executors read actions from PostgreSQL and write results to its outbox: the
brokers away, they stay ready."""


def topics_of(prefix: str) -> list[str]:
    names = [f"{prefix}.deposits.{chain}" for chain in (SOURCE, DESTINATION)]
    return names + [
        f"{prefix}.{name}" for name in ("intent-events", "dlq", "actions", "action-results")
    ]


async def all_answer(
    readiness: Readiness,
    status: int,
    names: tuple[str, ...],
    within: float = 60.0,
    since: float = 0.0,
) -> None:
    """Until each daemon of ``names`` has answered ``status`` since ``since`` (every
    daemon alive)."""
    deadline = time.monotonic() + within
    while True:
        for daemon in readiness.daemons:
            assert daemon.alive, f"{daemon.name} exited\n{daemon.log.read_text()[-3000:]}"
        seen = {name: readiness.between(name, since, time.monotonic()) for name in names}
        if all(status in statuses for statuses in seen.values()):
            return
        assert time.monotonic() < deadline, f"not all answered {status}: {seen}"
        await asyncio.sleep(0.2)


async def assert_events_on_kafka(broker: PrivateBroker, prefix: str, pool: Pool) -> None:
    """Every event of the event log reached the events topic (at least once)."""
    stored = {str(r["id"]) for r in await pool.fetch("SELECT id FROM intent_events")}
    async with TopicReader(broker.bootstrap, f"{prefix}.intent-events") as events:
        await events.wait_for(lambda ms: stored <= {e["id"] for e in json_values(ms)}, timeout=60)


@pytest.mark.timeout(480)
async def test_every_role_rides_out_the_brokers_away_at_start_and_cut(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    prefix = settings.kafka.topic_prefix
    funder = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    usdc = infra[f"INTENTD_{SOURCE}_USDC"]
    payer = await asyncio.to_thread(
        Payer, infra[f"INTENTD_{SOURCE}_RPC_URL"], funder, usdc, 20 * UNIT
    )
    async with private_broker(tmp_path) as broker:
        broker.create(topics_of(prefix))
        env = env_for(settings, INTENTD__KAFKA__BOOTSTRAP_SERVERS=broker.bootstrap)
        intents = Intents(payer_env(env, infra, payer), payer)
        broker.down()  # away when the daemons start
        daemons = start(ROLES, env, tmp_path)
        pids = {d.name: d.process.pid for d in daemons}
        try:
            async with Readiness(daemons) as readiness:
                await all_answer(readiness, 503, USES_KAFKA)  # up, serving, not ready
                await asyncio.sleep(5)
                broker.up()
                await readiness.all_ready(within=90)

                async def down() -> None:
                    broker.down()

                async def up() -> None:
                    broker.up()

                each = functools.partial(outage, end=up, intents=intents, readiness=readiness)
                windows = [
                    await each("kafka cut", begin=down, seconds=10, noticed_by=USES_KAFKA),
                    await each("kafka cut again", begin=down, seconds=6, noticed_by=USES_KAFKA),
                ]
                await settled(pool, intents)
                kafka_users = [d for d in daemons if d.name in USES_KAFKA]
                assert_not_ready_during(readiness, kafka_users, windows)
            assert {d.name: d.process.pid for d in daemons if d.alive} == pids
        finally:
            await stop_all(daemons)
        await assert_events_on_kafka(broker, prefix, pool)
    await assert_each_payment_credited_once(pool, intents)
    await assert_each_event_once(pool, intents)
    assert_quiet(daemons, outages=3)


@pytest.mark.timeout(600)
async def test_run_rides_out_postgresql_and_the_brokers_away_together(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    """``intentd run`` (every role in one process) through the fault run's worst case:
    PostgreSQL cut for longer than the reorg hold watch's round while the brokers are
    away (the lifecycle of the old code ended there, its process staying up and
    ready for minutes, with intents stuck in REFUNDING), then each alone."""
    settings, pool = own_stack
    prefix = settings.kafka.topic_prefix
    funder = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    usdc = infra[f"INTENTD_{SOURCE}_USDC"]
    payer = await asyncio.to_thread(
        Payer, infra[f"INTENTD_{SOURCE}_RPC_URL"], funder, usdc, 20 * UNIT
    )
    url = settings.database.url.get_secret_value()
    async with private_broker(tmp_path) as broker, proxy_for(url, 5432) as proxy:
        broker.create(topics_of(prefix))
        env = env_for(settings, INTENTD__KAFKA__BOOTSTRAP_SERVERS=broker.bootstrap,
                      INTENTD__API__PORT=str(free_port()))  # fmt: skip
        intents = Intents(payer_env(env, infra, payer), payer)
        proxied = {**env, "INTENTD__DATABASE__URL": through_proxy(url, proxy)}
        daemons = start({"run": ["run", "--no-migrate"]}, proxied, tmp_path)
        [daemon] = daemons
        pid = daemon.process.pid
        try:
            async with Readiness(daemons) as readiness:
                await readiness.all_ready(within=90)

                async def both_away() -> None:
                    broker.down()
                    await proxy.cut()

                async def both_back() -> None:
                    await proxy.restore()
                    broker.up()

                async def down() -> None:
                    broker.down()

                async def up() -> None:
                    broker.up()

                each = functools.partial(outage, intents=intents, readiness=readiness)
                windows = [
                    await each("postgresql and kafka", begin=both_away, end=both_back, seconds=35),
                    await each("postgresql cut", begin=proxy.cut, end=proxy.restore, seconds=8),
                    await each("kafka cut", begin=down, end=up, seconds=8),
                ]
                await settled(pool, intents)
                assert_not_ready_during(readiness, daemons, windows)
            assert daemon.alive and daemon.process.pid == pid
        finally:
            await stop_all(daemons)
    await assert_each_payment_credited_once(pool, intents)
    await assert_each_event_once(pool, intents)
    assert_quiet(daemons, outages=4)
