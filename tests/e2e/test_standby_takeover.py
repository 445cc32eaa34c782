"""A standby ``intentd poll --chain X`` takes over within seconds of ``kill -9`` of the
active one (its lease, a PostgreSQL advisory lock, dies with its session), under a
steady flow of payments that lasts until the standby has published payments of its
own, and no block is skipped: every payment reaches the deposits
topic (a block published before the cursor commit may be published again, with the
same deposit id). The takeover time is printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path

import orjson
import pytest
from tests.integration.poller_chain import Chain, own_chain
from tests.integration.test_poller import TopicReader, json_values, toml_config
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.settings import Settings

pytestmark = pytest.mark.e2e
BEFORE_KILL = 13
"""Payments made before the active poller is killed (1.3 s of the flow, unloaded)."""
AFTER_TAKEOVER = 5
"""Payments the standby publishes after it took over, before the flow ends."""
PACE = 0.1
FLOW_LIMIT = 60.0
"""Seconds the flow of payments may last at most."""


@pytest.fixture
async def poll_chain(
    infra: dict[str, str], make_settings: Callable[..., Settings], topic_prefix: str
) -> AsyncIterator[Chain]:
    """An automining anvil of this test alone, with its tokens, under a chain name no
    other test uses (cursors live in the session database), and its deposits topic."""
    name, chain_id = f"STANDBY_{secrets.token_hex(4).upper()}", 996_000 + secrets.randbelow(999)
    async with own_chain(infra, make_settings, topic_prefix, name, chain_id) as chain:
        yield chain


def start_poller(config: Path, chain: Chain, log: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "intentd", "--config", str(config), "poll", "--chain"]
    with log.open("ab") as out:
        return subprocess.Popen(
            [*argv, chain.name], stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ)
        )


def logged_at(log: Path, event: str) -> float | None:
    """Wall-clock time of the first `event` in a JSON log, or None."""
    for line in log.read_bytes().splitlines():
        if line.startswith(b"{") and event.encode() in line:
            record = orjson.loads(line)
            if record.get("event") == event:
                return datetime.fromisoformat(record["timestamp"]).timestamp()
    return None


async def wait_logged(log: Path, event: str, timeout: float = 30) -> float:
    deadline = time.monotonic() + timeout
    while (at := logged_at(log, event)) is None:
        assert time.monotonic() < deadline, f"{event!r} not logged:\n{log.read_text()[-3000:]}"
        await asyncio.sleep(0.05)
    return at


async def test_a_standby_poller_takes_over_after_kill_9_without_skipping_a_block(
    poll_chain: Chain, pool: Pool, settings: Settings, infra: dict[str, str], tmp_path: Path
) -> None:
    chain = poll_chain
    addresses = [(await new_intent(pool, settings)).intent_address for _ in range(4)]
    config = tmp_path / "poll.toml"
    config.write_text(toml_config(chain.settings, chain.name))
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    active = start_poller(config, chain, log_a)
    processes = [active]
    sent: list[str] = []
    stack = AsyncExitStack()
    flow: asyncio.Task[None] | None = None
    try:
        await wait_logged(log_a, "poller started")
        standby = start_poller(config, chain, log_b)
        processes.append(standby)
        await wait_logged(log_b, "another poller holds the chain; waiting as a standby")

        taken_over = asyncio.Event()
        after: list[str] = []  # payments made after the takeover
        wanted = {address.lower() for address in addresses}
        reader = await stack.enter_async_context(
            TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic)
        )

        async def published_after_takeover() -> bool:
            await reader.drain(0.05)
            return set(after) <= {m["tx_hash"] for m in json_values(reader.messages)}

        async def pay() -> None:
            """One payment each PACE seconds until the standby published some of its own."""
            deadline = time.monotonic() + FLOW_LIMIT
            n = 0
            while len(after) < AFTER_TAKEOVER or not await published_after_takeover():
                assert time.monotonic() < deadline, f"no takeover in {FLOW_LIMIT} s of payments"
                tx = await chain.rpc.send(chain.payer, addresses[n % 4], value=100 + n)
                sent.append(tx)  # automining: one block per payment
                if taken_over.is_set():
                    after.append(tx)
                n += 1
                await asyncio.sleep(PACE)

        flow = asyncio.create_task(pay())
        while len(sent) < BEFORE_KILL:  # a flow on, as 1.3 s of it when the machine is idle
            assert not flow.done(), await flow
            await asyncio.sleep(0.02)
        killed_at = time.time()
        os.kill(active.pid, signal.SIGKILL)
        await asyncio.to_thread(active.wait, 10)
        took_over = await wait_logged(log_b, "poller started", timeout=10) - killed_at
        assert not flow.done(), "the payments ended before the takeover"
        taken_over.set()
        await flow
        await reader.wait_for(
            lambda ms: set(sent) <= {m["tx_hash"] for m in json_values(ms)}, limit=30
        )
        await reader.drain(0.3)
        mine = [m for m in json_values(reader.messages) if m["to_address"] in wanted]
    finally:
        if flow is not None and not flow.done():
            flow.cancel()
            await asyncio.wait({flow})
        await stack.aclose()
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = [await asyncio.to_thread(p.wait, 30) for p in processes]
    assert codes[-1] == 0, log_b.read_text()[-3000:]
    print(f"\npoller standby takeover after kill -9, under {1 / PACE:.0f} payments/s:")
    print(f"  takeover: {took_over:.2f} s; republished after the kill: {len(mine) - len(sent)}")
    assert took_over < 10
    by_tx: dict[str, set[str]] = {}
    for m in mine:
        by_tx.setdefault(m["tx_hash"], set()).add(m["id"])
    assert set(by_tx) == set(sent)  # no block skipped
    assert all(len(ids) == 1 for ids in by_tx.values())  # a republished deposit keeps its id
    amounts = {m["tx_hash"]: int(m["amount"]) for m in mine}
    assert sorted(amounts[tx] for tx in sent) == [100 + n for n in range(len(sent))]
