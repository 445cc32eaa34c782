"""SIGTERM at any moment: every role stops within its deadline and leaves nothing half-done.

Start-up: each command (``run`` and every role alone, ``api --workers 2`` too) gets
SIGTERM at random moments after it is spawned (seeded; the seed is printed, and
``SIGTERM_SEED=n`` replays a run). Busy: ``intentd run`` gets SIGTERM while intents
are created through the API and paid on chain, is started again, and every payment
is then credited exactly once and every intent the API answered 201 is stored.

Every stop is checked the same way (docs/operations.md, Stopping): the process
exits 0 within ``process.drain_seconds`` plus a margin (or, before intentd wrote a
single line, by the default action of SIGTERM: nothing had started), no advisory
lock of the database is left held and no process it started is left behind.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.sigterm_support import (
    SOURCE,
    UNIT,
    Flow,
    Payer,
    marked,
    seed,
    spawn,
    terminate,
    wait_ready,
)
from tests.support import daemon_env
from tests.support import run_cli as cli

from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port

pytestmark = pytest.mark.e2e

DRAIN_SECONDS = 4.0
MARGIN = 6.0  # interpreter exit, pool and producer close, on a loaded 2-core machine
WEBHOOK_KEY = "11" * 32
COMMANDS: list[list[str]] = [
    ["run"],  # migrates first (a no-op here, under the migration lock)
    ["poll", "--chain", "BASE_TESTNET"],
    ["execute", "--chain", "BASE_TESTNET"],
    ["lifecycle"],
    ["webhooks"],
    ["api"],
    ["api", "--workers", "2"],
]
POINTS = 3  # start-up moments per command
START_WINDOW = 5.0  # seconds after spawn within which SIGTERM is sent
INTERPRETER_START = 0.5  # before intentd.__main__ installs its handler (about 0.1 s)


@dataclass(frozen=True)
class Stopped:
    command: str
    delay: float
    code: int
    seconds: float
    log: Path


async def stop_at(args: list[str], delay: float, env: dict[str, str], log: Path) -> Stopped:
    mark = secrets.token_hex(6)
    process = spawn(args, env, log, mark)
    await asyncio.sleep(delay)
    try:
        code, seconds = await terminate(process, DRAIN_SECONDS + MARGIN)
    except AssertionError as exc:
        raise AssertionError(f"{args} at {delay:.2f} s: {exc}\n{log.read_text()[-3000:]}") from None
    for _ in range(50):  # a worker told of its parent's death exits on its own
        if not marked(mark):
            break
        await asyncio.sleep(0.1)
    left = marked(mark)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{args} at {delay:.2f} s left processes behind\n{log.read_text()[-3000:]}"
    return Stopped(" ".join(args), delay, code, seconds, log)


def assert_clean(stopped: Stopped, *, drained: bool) -> None:
    """Exit 0 within the deadline, no traceback; with ``drained``, every role
    returned before the drain deadline (nothing had to be cancelled)."""
    text = stopped.log.read_text()
    where = f"{stopped.command} stopped {stopped.delay:.2f} s after spawn ({stopped.log.name})"
    if stopped.code == -signal.SIGTERM:  # the default action: only before intentd ran
        assert stopped.delay < INTERPRETER_START, f"{where}: killed by SIGTERM\n{text[-3000:]}"
    else:
        assert stopped.code == 0, f"{where}: exit {stopped.code}\n{text[-3000:]}"
    assert stopped.seconds < DRAIN_SECONDS + MARGIN, where
    assert "Traceback" not in text, f"{where}\n{text[-3000:]}"
    assert "connections still in use" not in text, f"{where}: a role kept a connection"
    if drained:
        assert "cancelling" not in text, f"{where}: not drained in time\n{text[-3000:]}"


async def advisory_locks(pool: Pool) -> int:
    count: int = await pool.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    return count


@pytest.mark.timeout(180)
async def test_sigterm_at_random_moments_of_start_up(
    own_stack: tuple[Settings, Pool], tmp_path: Path
) -> None:
    settings, pool = own_stack
    env = daemon_env(
        settings,
        INTENTD_WEBHOOK_KEY=WEBHOOK_KEY,
        INTENTD__WEBHOOKS__GROUP=f"{settings.kafka.topic_prefix}-webhooks",
        INTENTD__PROCESS__DRAIN_SECONDS=str(DRAIN_SECONDS),
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
    )
    rng = random.Random(seed())
    plan = [(args, rng.uniform(0, START_WINDOW)) for args in COMMANDS for _ in range(POINTS)]
    rng.shuffle(plan)
    results: list[Stopped] = []
    for at in range(0, len(plan), 3):  # three at once: a loaded 2-core machine
        batch = plan[at : at + 3]
        results += await asyncio.gather(
            *(
                stop_at(args, delay, env, tmp_path / f"{at + n}.log")
                for n, (args, delay) in enumerate(batch)
            )
        )
    for stopped in sorted(results, key=lambda s: (s.command, s.delay)):
        print(
            f"  {stopped.command:32} SIGTERM at {stopped.delay:4.2f} s:"
            f" exit {stopped.code:4} after {stopped.seconds:5.2f} s ({stopped.log.name})"
        )
    for stopped in results:
        assert_clean(stopped, drained=True)
    assert await advisory_locks(pool) == 0


ROUNDS = 2  # SIGTERMs in the busy flow, each followed by a restart


@pytest.mark.timeout(240)
async def test_sigterm_in_a_busy_flow_loses_and_doubles_nothing(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    port = free_port()
    env = daemon_env(
        settings,
        INTENTD_WEBHOOK_KEY=WEBHOOK_KEY,
        INTENTD__WEBHOOKS__GROUP=f"{settings.kafka.topic_prefix}-webhooks",
        INTENTD__API__PORT=str(port),
        INTENTD__PROCESS__DRAIN_SECONDS=str(DRAIN_SECONDS),
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
        INTENTD__CHAINS__BASE_TESTNET__CONFIRMATIONS="1",
        INTENTD__CHAINS__ARBITRUM_TESTNET__CONFIRMATIONS="1",
    )
    api = f"http://127.0.0.1:{port}/api/v1"
    rng = random.Random(seed())
    cli(env, "clients", "create", "sigterm-shop", "--exist-ok")
    key = cli(env, "keys", "create", "--client", "sigterm-shop", "--mode", "test")["api_key"]
    usdc = infra[f"INTENTD_{SOURCE}_USDC"]
    funder = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    rpc = infra[f"INTENTD_{SOURCE}_RPC_URL"]
    payer = await asyncio.to_thread(Payer, rpc, funder, usdc, 500 * UNIT)
    flow = Flow(api, key, usdc, payer)
    stops: list[Stopped] = []
    tasks: list[asyncio.Task[None]] = []
    for round_ in range(ROUNDS + 1):
        log = tmp_path / f"run{round_}.log"
        daemon = spawn(["run", "--no-migrate"], env, log, secrets.token_hex(6))
        try:
            await wait_ready(daemon, api, log)
            if not tasks:
                tasks = [asyncio.create_task(flow.create()), asyncio.create_task(flow.pay())]
            busy = rng.uniform(1.0, 4.0) if round_ < ROUNDS else 0.0
            await asyncio.sleep(busy)
            if round_ == ROUNDS:  # the last run: the flow ends, everything is settled
                flow.ended.set()
                await asyncio.gather(*tasks)
                await wait_settled(pool, flow)
        finally:  # round 1: a second SIGTERM cancels the batches in hand
            again = 0.02 if round_ == 1 else None
            code, seconds = await terminate(daemon, DRAIN_SECONDS + MARGIN, again_after=again)
        stops.append(Stopped("run (busy)", busy, code, seconds, log))
        print(
            f"  round {round_}: SIGTERM after {busy:.2f} s of flow,"
            f" exit {code} after {seconds:.2f} s; {len(flow.created)} intents so far"
        )
    for stopped in stops:
        assert_clean(stopped, drained=False)  # a batch cut by the deadline is safe too
    await assert_nothing_half_done(pool, flow)
    assert await advisory_locks(pool) == 0


async def wait_settled(pool: Pool, flow: Flow, timeout: float = 90) -> None:
    """Until every paid intent has received its payment (or the time is up)."""
    ids = list(flow.payments.values())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        short = await pool.fetchval(
            "SELECT count(*) FROM intents WHERE id = ANY($1::bigint[]) AND received < $2",
            ids, UNIT,
        )  # fmt: skip
        if short == 0:
            return
        await asyncio.sleep(0.3)


async def assert_nothing_half_done(pool: Pool, flow: Flow) -> None:
    created = {record["id"] for record in flow.created}
    stored = {r["id"] for r in await pool.fetch("SELECT id FROM intents")}
    assert created <= stored, f"answered 201 but not stored: {sorted(created - stored)}"
    rows = await pool.fetch(
        "SELECT tx_hash, intent_id, amount, disposition FROM deposits WHERE chain = $1", SOURCE
    )
    by_tx: dict[str, list[Any]] = {}
    for row in rows:
        by_tx.setdefault(row["tx_hash"].lower(), []).append(row)
    for tx, intent in flow.payments.items():
        found = by_tx.get(tx.lower(), [])
        assert len(found) == 1, f"payment {tx} to intent {intent} recorded {len(found)} times"
        assert (found[0]["intent_id"], int(found[0]["amount"])) == (intent, UNIT)
        assert found[0]["disposition"] == "credited", found[0]
    received = {
        r["id"]: int(r["received"])
        for r in await pool.fetch("SELECT id, received FROM intents WHERE id = ANY($1::bigint[])",
                                  list(created))
    }  # fmt: skip
    paid = {intent: 0 for intent in created}
    for intent in flow.payments.values():
        paid[intent] += UNIT
    assert received == paid  # every payment credited exactly once, nothing else
    # transactions: each one signed was recorded with a nonce below the signer's next
    bad = await pool.fetch(
        "SELECT t.chain, t.signer, t.nonce, n.next_nonce FROM chain_transactions t"
        " LEFT JOIN signer_nonces n ON (n.chain, n.signer) = (t.chain, t.signer)"
        " WHERE n.next_nonce IS NULL OR t.nonce >= n.next_nonce"
    )
    assert not bad, bad
    print(
        f"  {len(created)} intents answered 201, {len(flow.payments)} paid;"
        f" {await pool.fetchval('SELECT count(*) FROM chain_transactions')} transactions"
    )
