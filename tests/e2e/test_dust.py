"""Dust cannot drain the gas tank, end to end on the anvil chains (issue 8, item 4).

``intentd run`` runs as a user runs it. An ERC-20 intent completes; then 1,000 real
transfers of one base unit each reach its (public, used) address; the pollers and the
lifecycle see every one. None may cost the gas tank anything: no refund action, no
gas top-up, no transaction of ours; each is recorded as a ``retained`` deposit and
the units stay at the intent address.

A native intent with a fee schedule whose fee is below ETH's ``min_sweep`` completes
without a fee sweep that could not pay its own gas: the fee is retained by rule, no
action fails (no "operator action needed" per intent).

The dust comes from a fresh account (funded by the dev payer, minting its own test
USDC), so the 1,000 transactions race no other test's nonces on the shared chains.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from eth_account import Account
from tests.e2e.chain_run import DESTINATION, SOURCE, running_on_chains
from tests.support import TRANSFER_ABI, balance, send_payments
from tests.support import run_cli as cli
from web3 import Web3

from intentd.adapters.postgres import Pool
from intentd.settings import NATIVE_TOKEN, Settings
from intentd_dev.devinfra.contracts import mint

pytestmark = pytest.mark.e2e
DUST = 1_000


def send_dust(rpc_url: str, key: str, token: str, to: str, count: int) -> None:
    """``count`` transfers of one base unit of ``token`` from ``key`` to ``to``, each its
    own transaction (anvil mines each in its own block); returns when all are mined."""
    w3 = Web3(Web3.HTTPProvider(rpc_url))
    account = Account.from_key(key)
    contract = w3.eth.contract(address=Web3.to_checksum_address(token), abi=TRANSFER_ABI)
    data = contract.encode_abi("transfer", [Web3.to_checksum_address(to), 1])
    nonce = int(w3.eth.get_transaction_count(account.address, "pending"))
    fee = int(w3.eth.gas_price) * 2 + 10**9
    chain_id = int(w3.eth.chain_id)
    hashes = []
    for offset in range(count):
        tx = {
            "chainId": chain_id,
            "nonce": nonce + offset,
            "to": contract.address,
            "data": data,
            "value": 0,
            "gas": 60_000,
            "maxFeePerGas": fee,
            "maxPriorityFeePerGas": 10**9,
        }
        hashes.append(w3.eth.send_raw_transaction(account.sign_transaction(tx).raw_transaction))
    for tx_hash in (hashes[0], hashes[-1]):
        receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=120)
        assert receipt["status"] == 1, receipt


async def ours(pool: Pool) -> dict[str, int]:
    """Our transactions by purpose, and actions by kind (this test's own database)."""
    rows = await pool.fetch("SELECT purpose, count(*) AS n FROM chain_transactions GROUP BY 1")
    kinds = await pool.fetch("SELECT kind, count(*) AS n FROM actions GROUP BY 1")
    return {r["purpose"]: r["n"] for r in rows} | {r["kind"]: r["n"] for r in kinds}


@pytest.mark.timeout(420)
async def test_dust_costs_the_gas_tank_nothing(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    src_rpc, dst_rpc = infra[f"INTENTD_{SOURCE}_RPC_URL"], infra[f"INTENTD_{DESTINATION}_RPC_URL"]
    usdc = infra[f"INTENTD_{SOURCE}_USDC"]
    payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    payer = Account.from_key(payer_key).address
    async with running_on_chains(
        settings,
        pool,
        tmp_path / "daemon.log",
        INTENTD__FEES__APP_FEE_BPS="100",  # 1 %: 0.00001 ETH on the native intent below
    ) as run:
        common = ["--recipient", payer, "--refund-address", payer]
        erc20 = cli(
            run.env,
            "intents",
            "create",
            "--source-chain",
            SOURCE,
            "--destination-chain",
            DESTINATION,
            "--token-in",
            usdc,
            "--amount",
            "5",
            *common,
        )
        native = cli(
            run.env,
            "intents",
            "create",
            "--source-chain",
            DESTINATION,
            "--destination-chain",
            SOURCE,
            "--token-in",
            NATIVE_TOKEN,
            "--amount",
            "0.001",
            *common,
        )
        assert native["app_fee_in_asset_token"] == "0.00001"  # below ETH's 0.00005
        await asyncio.to_thread(
            send_payments, src_rpc, payer_key, [(usdc, erc20["intent_address"], 5_050_000)]
        )
        await asyncio.to_thread(
            send_payments,
            dst_rpc,
            payer_key,
            [(NATIVE_TOKEN, native["intent_address"], 10**15 + 10**13)],
        )
        for record in (erc20, native):
            await run.until_status(record, "COMPLETED", timeout=120)
        await run.until(
            "SELECT count(*) = 0 FROM actions WHERE status IN ('ready', 'submitted')",
            timeout=120,
            what="every action settled",
        )
        assert await pool.fetchval("SELECT count(*) FROM actions WHERE status = 'failed'") == 0
        native_kinds = await pool.fetch(
            "SELECT kind FROM actions WHERE intent_id = $1 ORDER BY id", native["id"]
        )
        assert [r["kind"] for r in native_kinds] == ["prefill", "relayer_refund"]  # fee retained
        assert balance(dst_rpc, NATIVE_TOKEN, native["intent_address"]) >= 10**13
        before = await ours(pool)
        assert before["gas_topup"] >= 1  # the erc20 intent's relayer refund and fee sweep

        duster = Account.create()
        await asyncio.to_thread(
            send_payments, src_rpc, payer_key, [(NATIVE_TOKEN, duster.address, 10**18)]
        )
        await asyncio.to_thread(mint, src_rpc, duster.key.hex(), usdc, duster.address, DUST)
        started = time.monotonic()
        await asyncio.to_thread(
            send_dust, src_rpc, duster.key.hex(), usdc, erc20["intent_address"], DUST
        )
        sent = time.monotonic() - started
        await run.until(
            "SELECT count(*) = $2 FROM deposits WHERE intent_id = $1 AND amount = 1",
            erc20["id"],
            DUST,
            timeout=180,
            what=f"{DUST} dust deposits recorded",
        )
        await asyncio.sleep(2.0)  # let the executors have a look
        dispositions = await pool.fetch(
            "SELECT disposition, count(*) AS n FROM deposits WHERE intent_id = $1 AND amount = 1"
            " GROUP BY 1",
            erc20["id"],
        )
        assert {r["disposition"]: r["n"] for r in dispositions} == {"retained": DUST}
        assert await ours(pool) == before  # no refund, no top-up, no transaction of ours
        assert balance(src_rpc, usdc, erc20["intent_address"]) == DUST  # retained there
        reasons = await pool.fetch(
            "SELECT DISTINCT reason FROM deposits WHERE intent_id = $1 AND amount = 1",
            erc20["id"],
        )
        assert [r["reason"] for r in reasons] == ["late_deposit"]
        print(f"{DUST} dust transfers sent in {sent:.1f} s, all retained")
