"""A prefill waits until a second provider confirms its intent's deposits (real anvils).

Each test has its own database (``own_stack``) and its own anvils: the source chain,
the destination chain the executor pays on, and, as the disagreeing second provider,
a fork of the source taken before the deposit (it has the source's history, then a
block of its own at the deposit's height, without the deposit). A lying primary is
played by the deposit rows the test records: what it would have reported.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.log_capture import own_logs
from tests.support import new_intent

from intentd.adapters.postgres import Pool
from intentd.chain.evm.balances import UNKNOWN_SENDER, reconciled_tx_hash
from intentd.composition.roles import executor_role
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devchain import MINT, TRANSFER, DevChain, call_data
from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, start_anvil

pytestmark = pytest.mark.integration

UNIT = 10**6
DEPOSIT = 50 * UNIT
PREFILL = 49 * UNIT
RECIPIENT = "0x" + "5a" * 20
SRC_ID, DST_ID = 992_001, 992_002


@dataclass
class Env:
    own: Settings
    pool: Pool
    infra: dict[str, str]
    make_settings: Callable[..., Settings]
    source: AnvilProcess
    fork: AnvilProcess
    destination: AnvilProcess
    src_usdc: str
    dst_usdc: str
    dst: DevChain

    def settings(
        self, *, verify_above: str | None, verify_url: str, native_above: str | None = None
    ) -> Settings:
        relayer = dev_account(Role.RELAYER).address

        def usdc(address: str, **extra: Any) -> dict[str, Any]:
            return {"address": address, "symbol": "USDC", "name": "Test USD Coin",
                    "decimals": 6, "category": "stablecoin", **extra}  # fmt: skip

        checked = {} if verify_above is None else {"verify_above": verify_above}
        native = {} if native_above is None else {"native": {"verify_above": native_above}}
        return self.make_settings(
            hd_mnemonic=self.own.mnemonic(),
            database={"url": self.own.database.url.get_secret_value()},
            kafka=self.own.kafka.model_dump(),
            chains={
                SOURCE: {
                    "chain_id": SRC_ID, "network": "test", "rpc_urls": [self.source.url],
                    "verify_rpc_urls": [verify_url], "confirmations": 1, "rpc_timeout": 5.0,
                    "relayer": relayer, "tokens": [usdc(self.src_usdc, **checked)], **native,
                },
                DESTINATION: {
                    "chain_id": DST_ID, "network": "test", "rpc_urls": [self.destination.url],
                    "confirmations": 1, "rpc_timeout": 5.0, "relayer": relayer,
                    "tokens": [usdc(self.dst_usdc)],
                },
            },
            relayer_key=Path(self.infra["INTENTD_RELAYER_KEY_FILE"]).read_text().strip(),
            gas_tank_key=Path(self.infra["INTENTD_GAS_TANK_KEY_FILE"]).read_text().strip(),
            execution={"poll_interval": 0.2, "retry_backoff": 0.0, "unconfirmed_alert_after": 60},
        )  # fmt: skip


SOURCE = f"VSRC_{os.getpid()}"
DESTINATION = f"VDST_{os.getpid()}"


@pytest.fixture
async def env(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[Env]:
    own, pool = own_stack
    started: list[AnvilProcess] = []
    try:
        source = await asyncio.to_thread(start_anvil, SRC_ID)
        started.append(source)
        destination = await asyncio.to_thread(start_anvil, DST_ID)
        started.append(destination)
        async with DevChain(source.url) as src, DevChain(destination.url) as dst:
            funder = (await src.accounts())[0]
            src_usdc = await src.deploy_token(funder, "Test USD Coin", "USDC", 6)
            minted = call_data(MINT, funder, DEPOSIT)
            await src.receipt(await src.send(funder, src_usdc, data=minted))
            before = await src.block_number()
            fork = await asyncio.to_thread(
                start_anvil, SRC_ID, None, None,
                ["--fork-url", source.url, "--fork-block-number", str(before)],
            )  # fmt: skip
            started.append(fork)
            dst_funder = (await dst.accounts())[0]
            dst_usdc = await dst.deploy_token(dst_funder, "Test USD Coin", "USDC", 6)
            relayer = dev_account(Role.RELAYER).address.lower()
            await dst.receipt(
                await dst.send(dst_funder, dst_usdc, data=call_data(MINT, relayer, 1_000 * UNIT))
            )
            env = Env(own, pool, infra, make_settings, source, fork, destination, src_usdc,
                      dst_usdc, dst)  # fmt: skip
            yield env
    finally:
        for anvil in started:
            await asyncio.to_thread(anvil.stop)


async def deposit_and_prefill(env: Env, settings: Settings) -> int:
    """A real USDC deposit on the source, credited as the lifecycle records it, and the
    intent's ready prefill on the destination; returns the action id."""
    intent = await new_intent(env.pool, settings, amount="50", chain=SOURCE)
    async with DevChain(env.source.url) as src:
        payer = (await src.accounts())[0]
        data = call_data(TRANSFER, intent.intent_address, DEPOSIT)
        receipt = await src.receipt(await src.send(payer, env.src_usdc, data=data))
        async with DevChain(env.fork.url) as fork:
            await fork.mine(2)  # the fork's own blocks at the deposit's height, and on top
        await src.mine(1)
    [log] = receipt["logs"]
    await env.pool.execute(
        """
        INSERT INTO deposits (chain, tx_hash, log_index, transfer_index, block_number, block_hash,
                              block_time, token, from_address, to_address, amount, intent_id,
                              disposition)
        VALUES ($1, $2, $3, 0, $4, $5, $6, $7, $8, $9, $10, $11, 'credited')
        """,
        SOURCE, receipt["transactionHash"], int(log["logIndex"], 16),
        int(receipt["blockNumber"], 16), receipt["blockHash"], datetime.now(UTC),
        env.src_usdc.lower(), payer.lower(), intent.intent_address.lower(), DEPOSIT, intent.id,
    )  # fmt: skip
    return await ready_prefill(env, intent.id)


async def ready_prefill(env: Env, intent_id: int) -> int:
    """The intent's ready prefill of ``PREFILL`` to the recipient; its action id."""
    action_id = await env.pool.fetchval(
        """
        INSERT INTO actions (intent_id, kind, sequence, chain, token, amount, to_address, status,
                             signer_kind)
        VALUES ($1, 'prefill', 1, $2, $3, $4, $5, 'ready', 'relayer') RETURNING id
        """,
        intent_id, DESTINATION, env.dst_usdc.lower(), PREFILL, RECIPIENT,
    )  # fmt: skip
    return int(action_id)


def confirmed(row: Any) -> bool:
    return bool(row["status"] == "confirmed")


UNCONFIRMED = "intentd_prefills_unconfirmed_total"
OVERDUE = "intentd_prefills_unconfirmed_overdue_total"


def metric(name: str) -> float:
    return REGISTRY.get_sample_value(name, {"chain": DESTINATION}) or 0.0


def held_again(row: Any, counted: str, before: float) -> bool:
    """Whether the executor held the prefill once more (the metric `counted` moved past
    `before`) and postponed it (its next try is ahead)."""
    return metric(counted) > before and row["not_before"] > datetime.now(UTC)


async def recipient_balance(env: Env) -> int:
    data = "0x70a08231" + "00" * 12 + RECIPIENT[2:]
    return int(await env.dst.rpc("eth_call", {"to": env.dst_usdc, "data": data}, "latest"), 16)


async def test_a_second_provider_without_the_deposit_holds_the_prefill(env: Env) -> None:
    settings = env.settings(verify_above="10", verify_url=env.fork.url)
    action_id = await deposit_and_prefill(env, settings)
    held, overdue = metric(UNCONFIRMED), metric(OVERDUE)
    with own_logs() as logs:
        # Until the executor has held it (not for a fixed time: a loaded machine may
        # need more than 4 s to get there), then until the next try has alerted.
        row = await run_executor_until(
            env, settings, action_id, lambda r: held_again(r, UNCONFIRMED, held), until=30.0
        )
        assert held_again(row, UNCONFIRMED, held), "the executor never held the prefill"
        await env.pool.execute(  # the bound passes: next try alerts, once
            "UPDATE actions SET not_before = now(), created_at = now() - interval '1 hour'"
            " WHERE id = $1",
            action_id,
        )
        row = await run_executor_until(
            env, settings, action_id, lambda r: held_again(r, OVERDUE, overdue), until=30.0
        )

    assert metric(UNCONFIRMED) - held >= 2
    assert metric(OVERDUE) - overdue == 1
    alerts = [e for e in logs if e["log_level"] == "error"]
    assert len(alerts) == 1 and "operator action needed" in alerts[0]["event"]
    assert "is 0x" in alerts[0]["reasons"][0]  # the fork has another block at that height

    assert row["status"] == "ready"  # held, not failed, not dropped
    assert "not confirmed by the second provider" in row["last_error"]
    assert row["not_before"] > datetime.now(UTC)
    txs = await env.pool.fetchval(
        "SELECT count(*) FROM chain_transactions WHERE action_id = $1", action_id
    )
    assert txs == 0
    assert await recipient_balance(env) == 0


async def test_below_the_threshold_the_prefill_is_not_checked(env: Env) -> None:
    settings = env.settings(verify_above="50", verify_url=env.fork.url)  # 50 is not above 50
    action_id = await deposit_and_prefill(env, settings)
    row = await run_executor_until(env, settings, action_id, confirmed, until=30.0)

    assert row["status"] == "confirmed"
    assert await recipient_balance(env) == PREFILL


async def test_a_second_provider_that_agrees_lets_the_prefill_out(env: Env) -> None:
    # the source itself under another URL: an independent provider that sees the same chain
    settings = env.settings(verify_above="10", verify_url=env.source.url + "/?second")
    action_id = await deposit_and_prefill(env, settings)
    row = await run_executor_until(env, settings, action_id, confirmed, until=30.0)

    assert row["status"] == "confirmed"
    assert await recipient_balance(env) == PREFILL


async def native_payment_and_prefill(env: Env, settings: Settings, *, lie: bool) -> int:
    """A real top-level payment of 0.01 ETH to a native-coin intent on the source, the
    deposits a primary reported for it (``lie``: also a reconciled deposit of 0.01 ETH in
    the same block, as if a contract had paid it too) and the intent's ready prefill."""
    intent = await new_intent(env.pool, settings, amount="50", chain=SOURCE)
    address, paid = intent.intent_address.lower(), 10**16
    await env.pool.execute(
        "UPDATE intents SET token_in = $2 WHERE id = $1", intent.id, NATIVE_TOKEN.lower()
    )
    async with DevChain(env.source.url) as src:
        payer = (await src.accounts())[1]
        receipt = await src.receipt(await src.send(payer, address, value=paid))
        await src.mine(1)
    tx_hash, block_hash = receipt["transactionHash"], receipt["blockHash"]
    reported = [(tx_hash, payer.lower())]
    if lie:
        reported.append((reconciled_tx_hash(address, block_hash), UNKNOWN_SENDER))
    for reported_hash, sender in reported:
        await env.pool.execute(
            """
            INSERT INTO deposits (chain, tx_hash, log_index, transfer_index, block_number,
                                  block_hash, block_time, token, from_address, to_address,
                                  amount, intent_id, disposition)
            VALUES ($1, $2, -1, -1, $3, $4, $5, $6, $7, $8, $9, $10, 'credited')
            """,
            SOURCE, reported_hash, int(receipt["blockNumber"], 16), block_hash,
            datetime.now(UTC), NATIVE_TOKEN.lower(), sender, address, paid, intent.id,
        )  # fmt: skip
    return await ready_prefill(env, intent.id)


async def run_executor_until(
    env: Env, settings: Settings, action_id: int, done: Callable[[Any], bool], until: float
) -> Any:
    """Run the destination's executor until ``done(action row)`` or ``until`` s pass."""
    stop = asyncio.Event()
    task = asyncio.create_task(executor_role(settings, DESTINATION, pool=env.pool)(stop))
    deadline = time.monotonic() + until
    try:
        while time.monotonic() < deadline and not task.done():
            row = await env.pool.fetchrow("SELECT * FROM actions WHERE id = $1", action_id)
            if done(row):
                break
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
    return await env.pool.fetchrow("SELECT * FROM actions WHERE id = $1", action_id)


def contradicted() -> float:
    labels = {"chain": SOURCE}
    return REGISTRY.get_sample_value("intentd_deposits_contradicted_total", labels) or 0.0


async def test_a_reconciled_claim_beside_a_real_payment_of_its_block_holds_the_prefill(
    env: Env,
) -> None:
    """0.01 ETH arrived once; the primary reports it twice (the payment, and a reconciled
    deposit in the same block): the honest second provider refuses the claim."""
    settings = env.settings(
        verify_above=None, verify_url=env.source.url + "/?second", native_above="0.001"
    )
    action_id = await native_payment_and_prefill(env, settings, lie=True)
    before = contradicted()

    def refused(row: Any) -> bool:
        return row["status"] == "confirmed" or "unexplained" in (row["last_error"] or "")

    row = await run_executor_until(env, settings, action_id, refused, until=30.0)

    assert row["status"] == "ready"  # held, not paid, not failed
    assert "reconciled in block" in row["last_error"]
    assert contradicted() - before >= 1
    txs = await env.pool.fetchval(
        "SELECT count(*) FROM chain_transactions WHERE action_id = $1", action_id
    )
    assert txs == 0
    assert await recipient_balance(env) == 0


async def test_a_native_payment_the_second_provider_sees_lets_the_prefill_out(env: Env) -> None:
    settings = env.settings(
        verify_above=None, verify_url=env.source.url + "/?second", native_above="0.001"
    )
    action_id = await native_payment_and_prefill(env, settings, lie=False)
    row = await run_executor_until(env, settings, action_id, confirmed, until=30.0)

    assert row["status"] == "confirmed"
    assert await recipient_balance(env) == PREFILL
