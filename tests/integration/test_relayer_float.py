"""The relayer's float on anvil and PostgreSQL (issue 20, section 4; docs/execution.md,
"The relayer's float").

Before: a prefill beyond what the relayer held reverted its gas estimate, counted a
failed attempt, and failed for good within a second or so (``max_attempts`` with no
backoff); the lifecycle refunded the payer, although a refill minutes later would have
paid the recipient. Now it waits for a refill (up to ``liquidity.prefill_wait``), then
fails and the payer is refunded; a kill while it waits neither loses nor doubles it.
The fakes' versions are in ``tests/unit/execution/test_prefill_funds_on_fakes.py``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.integration import test_executor
from tests.integration.test_executor import (
    RECIPIENT,
    Chain,
    Running,
    config_file,
    process_env,
    results,
    seed_action,
    start_executor,
    stop_process,
    transactions,
    wait_exit,
    wait_status,
)
from tests.lifecycle_calls import apply_action_result, apply_deposit
from tests.support import PAYEE, new_intent

from intentd.adapters.postgres import Pool
from intentd.faults import CRASH_EXIT_CODE
from intentd.messages import ActionResultMessage, DepositMessage, deposit_id
from intentd.settings import LiquidityConfig, Settings

pytestmark = pytest.mark.integration
make_chain = test_executor.make_chain  # an anvil of its own, mining every 0.5 s
USDC = 10**6
NATIVE = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"


def with_liquidity(settings: Settings, **liquidity: Any) -> Settings:
    config = LiquidityConfig(**{"read_interval": 0.5, **liquidity})
    return settings.model_copy(update={"liquidity": config})


async def wait_row(
    pool: Pool, action_id: int, done: Callable[[Any], bool], timeout: float = 30.0
) -> Any:
    deadline = time.monotonic() + timeout
    while not done(row := await pool.fetchrow("SELECT * FROM actions WHERE id = $1", action_id)):
        assert time.monotonic() < deadline, dict(row)
        await asyncio.sleep(0.1)
    return row


async def stored_float(pool: Pool, chain: str, done: Callable[[dict[str, Any]], bool]) -> Any:
    """The chain's ``relayer_float`` rows by (holder, token), once ``done`` holds."""
    deadline = time.monotonic() + 30
    while True:
        rows = await pool.fetch("SELECT * FROM relayer_float WHERE chain = $1", chain)
        found = {(r["holder"], r["token"]): r for r in rows}
        if done(found):
            return found
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.1)


def waiting_for_funds(row: Any) -> bool:
    """The prefill is ready and says what the relayer lacks, or it left ``ready``."""
    return row["status"] != "ready" or "lacks" in (row["last_error"] or "")


async def test_a_prefill_beyond_the_balance_waits_for_a_refill_then_pays(
    make_chain: Any, pool: Pool, settings: Settings
) -> None:
    chain: Chain = await make_chain()
    held = await chain.token_balance(chain.relayer)  # 1,000 USDC
    amount = held + 500 * USDC
    action_id, _, _ = await seed_action(
        pool, settings, chain, kind="prefill", token=chain.usdc, amount=amount,
        signer_kind="relayer",
    )  # fmt: skip
    running = Running(with_liquidity(chain.settings, prefill_wait=300.0), chain.name, pool)
    try:
        row = await wait_row(pool, action_id, waiting_for_funds)
        # before: status failed, attempts 3, "gas estimate reverted", the payer refunded
        assert (row["status"], row["attempts"]) == ("ready", 0), dict(row)
        assert "the relayer lacks 500 USDC" in row["last_error"]
        assert await transactions(pool, action_id) == []
        # the executor's reading, as the API and `intentd status` see it
        tank = await chain.balance(chain.gas_tank)
        found = await stored_float(
            pool, chain.name, lambda f: ("relayer", chain.usdc) in f and ("gas_tank", NATIVE) in f
        )
        relayer = found[("relayer", chain.usdc)]
        assert (int(relayer["balance"]), int(relayer["reserved"])) == (held, amount)
        assert relayer["address"] == chain.relayer and relayer["block_number"] > 0
        assert int(found[("gas_tank", NATIVE)]["balance"]) == tank

        await chain.mint(chain.relayer, 600 * USDC)  # the operator refills the relayer
        row = await wait_status(pool, action_id, "confirmed", timeout=60)
    finally:
        await running.finish()
    assert await chain.token_balance(RECIPIENT) == amount
    assert await chain.token_balance(chain.relayer) == 100 * USDC
    assert [r["event"] for r in await results(pool, settings, action_id)] == ["sent", "confirmed"]


def two_chains(make_settings: Callable[..., Settings], source: Chain, destination: Chain) -> Any:
    """Settings with both anvils: intents from ``source`` to ``destination``."""
    chains = {
        c.name: c.settings.chains[c.name].model_dump(mode="json") for c in (source, destination)
    }
    base = source.settings
    return with_liquidity(
        make_settings(
            chains=chains,
            relayer_key=base.relayer_key.get_secret_value() if base.relayer_key else None,
            gas_tank_key=base.gas_tank_key.get_secret_value() if base.gas_tank_key else None,
            execution=base.execution.model_dump(),
        ),
        prefill_wait=3.0,
    )


def deposit(chain: Chain, to: str, amount: int) -> DepositMessage:
    tx = "0x" + secrets.token_hex(32)
    return DepositMessage(
        id=deposit_id(chain.name, tx, chain.usdc, 0), chain=chain.name, chain_id=chain.chain_id,
        tx_hash=tx, log_index=0, transfer_index=0, block_number=1,
        block_hash="0x" + secrets.token_hex(32), block_time=int(datetime.now(UTC).timestamp()),
        token=chain.usdc, from_address="0x" + "2" * 40, to_address=to, amount=amount,
    )  # fmt: skip


async def test_a_prefill_short_past_the_bound_fails_and_the_payer_is_refunded_on_chain(
    make_chain: Any, pool: Pool, make_settings: Callable[..., Settings]
) -> None:
    source: Chain = await make_chain()
    destination: Chain = await make_chain()
    settings = two_chains(make_settings, source, destination)
    intent = await new_intent(pool, settings, amount="2000", chain=source.name)
    assert intent.destination_chain == destination.name and intent.amount_out == 2_000 * USDC
    await source.mint(intent.intent_address, intent.total_due)  # the payer pays
    async with pool.acquire() as conn:
        await apply_deposit(
            conn, settings, deposit(source, intent.intent_address, intent.total_due),
            now=datetime.now(UTC),
        )  # fmt: skip
    prefill = await pool.fetchval(
        "SELECT id FROM actions WHERE intent_id = $1 AND kind = 'prefill'", intent.id
    )
    relayer_before = await destination.token_balance(destination.relayer)  # 1,000 USDC
    executors = [Running(settings, c.name, pool) for c in (source, destination)]
    try:
        row = await wait_status(pool, prefill, "failed", timeout=60)
        assert "the relayer lacked 1000 USDC for" in row["last_error"]
        assert await transactions(pool, prefill) == []
        [failed] = await results(pool, settings, prefill)
        assert failed["event"] == "failed"
        async with pool.acquire() as conn:  # what the lifecycle does with it
            await apply_action_result(
                conn, settings, ActionResultMessage(**{k: v for k, v in failed.items()
                                                       if not k.startswith("_")}),
                now=datetime.now(UTC),
            )  # fmt: skip
        refund = await pool.fetchrow(
            "SELECT id, reason, amount, chain FROM actions WHERE intent_id = $1"
            " AND kind = 'user_refund'",
            intent.id,
        )
        assert (refund["reason"], int(refund["amount"]), refund["chain"]) == (
            "failed", intent.total_due, source.name,
        )  # fmt: skip
        await wait_status(pool, refund["id"], "confirmed", timeout=60)
    finally:
        for running in executors:
            await running.finish()
    assert await source.token_balance(PAYEE.lower()) == intent.total_due  # all of it back
    assert await destination.token_balance(RECIPIENT) == 0
    assert await destination.token_balance(destination.relayer) == relayer_before


async def crash_loop(
    config: Path,
    chain: Chain,
    env: dict[str, str],
    log: Path,
    *,
    crashes: int,
    then: Callable[[], Awaitable[None]],
) -> None:
    """Start the executor with its crash point armed ``crashes`` times (each dies there),
    then run ``then``."""
    for _ in range(crashes):
        process = start_executor(config, chain, env, log)
        assert await wait_exit(process, 30, log) == CRASH_EXIT_CODE, log.read_text()[-3000:]
    await then()


@dataclass
class Prefill:
    """A relayer prefill on a chain of its own, and an executor's config for it."""

    chain: Chain
    action_id: int
    nonce: int
    """The relayer's nonce before the executor ran."""
    config: Path
    log: Path


async def relayer_prefill(  # noqa: PLR0917 - the fixtures, passed on
    make_chain: Any, pool: Pool, settings: Settings, tmp_path: Path, amount: int, wait: float
) -> Prefill:
    """A ready prefill of ``amount`` by the relayer; the config's ``liquidity.prefill_wait``
    is ``wait``."""
    chain: Chain = await make_chain()
    action_id, _, _ = await seed_action(
        pool, settings, chain, kind="prefill", token=chain.usdc, amount=amount,
        signer_kind="relayer",
    )  # fmt: skip
    nonce = await chain.nonce(chain.relayer)
    config = config_file(chain, tmp_path)
    config.write_text(config.read_text() + f"[liquidity]\nprefill_wait = {wait!r}\n")
    return Prefill(chain, action_id, nonce, config, tmp_path / "executor.log")


async def test_a_kill_while_a_prefill_waits_for_funds_neither_loses_nor_doubles_it(
    make_chain: Any, pool: Pool, settings: Settings, infra: dict[str, str], tmp_path: Path
) -> None:
    amount = 1_200 * USDC
    prefill = await relayer_prefill(make_chain, pool, settings, tmp_path, amount, wait=600.0)
    chain, action_id, nonce = prefill.chain, prefill.action_id, prefill.nonce
    config, log = prefill.config, prefill.log
    env = process_env(infra, settings, INTENTD_CRASH_AT="executor.liquidity_short")

    async def refill() -> None:
        await chain.mint(chain.relayer, 500 * USDC)

    # killed each time it has found the relayer short, before the wait is recorded
    await crash_loop(config, chain, env, log, crashes=3, then=refill)
    process = start_executor(config, chain, env, log)  # still armed: it is not short now
    try:
        await wait_status(pool, action_id, "confirmed", timeout=60)
    finally:
        await stop_process(process, log)
    assert await chain.token_balance(RECIPIENT) == amount
    assert await chain.nonce(chain.relayer) == nonce + 1
    assert [r["event"] for r in await results(pool, settings, action_id)] == ["sent", "confirmed"]
    assert len(await transactions(pool, action_id)) == 1


async def test_a_kill_as_the_wait_for_funds_ends_fails_the_prefill_once(
    make_chain: Any, pool: Pool, settings: Settings, infra: dict[str, str], tmp_path: Path
) -> None:
    prefill = await relayer_prefill(make_chain, pool, settings, tmp_path, 5_000 * USDC, wait=0.0)
    chain, action_id, nonce = prefill.chain, prefill.action_id, prefill.nonce
    config, log = prefill.config, prefill.log
    armed = process_env(infra, settings, INTENTD_CRASH_AT="executor.liquidity_expired")

    async def nothing() -> None:
        return None

    # killed each time it gives up, before the failure is recorded
    await crash_loop(config, chain, armed, log, crashes=2, then=nothing)
    assert (await pool.fetchrow("SELECT status FROM actions WHERE id = $1", action_id))[
        "status"
    ] == "ready"
    process = start_executor(config, chain, process_env(infra, settings), log)
    try:
        await wait_status(pool, action_id, "failed", timeout=60)
    finally:
        await stop_process(process, log)
    assert [r["event"] for r in await results(pool, settings, action_id)] == ["failed"]
    assert await transactions(pool, action_id) == []
    assert await chain.nonce(chain.relayer) == nonce
