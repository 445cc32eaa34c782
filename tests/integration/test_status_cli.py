"""``intentd status``: the relayer's float as an operator reads it at a terminal, from
PostgreSQL (the rows the executors store), the same figures the API admits intents by."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from intentd.adapters.postgres import Pool
from intentd.settings import NATIVE_TOKEN, Settings
from intentd.status_cli import status_command

pytestmark = pytest.mark.integration
USDC_ADDRESS = "0x" + "ab" * 20
RELAYER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
TANK = "0x" + "7a" * 20


def one_chain(make_settings: Callable[..., Settings], name: str) -> Settings:
    return make_settings(
        chains={
            name: {
                "chain_id": 990_000 + secrets.randbelow(9_999), "network": "test",
                "rpc_urls": ["http://127.0.0.1:9"], "relayer": RELAYER,
                "tokens": [{"address": USDC_ADDRESS, "symbol": "USDC", "name": "USD Coin",
                            "decimals": 6, "category": "stablecoin"}],
            }
        },
        liquidity={"overcommit_bps": 20_000, "max_age": 60.0},
    )  # fmt: skip


async def store(pool: Pool, chain: str, holder: str, token: str, **figures: Any) -> None:
    values = {"balance": 0, "reserved": 0, "owed": 0, "owed_overdue": 0, "pending": 0, "age": 0}
    values.update(figures)
    await pool.execute(
        """
        INSERT INTO relayer_float (chain, holder, token, address, balance, block_number,
                                   reserved, owed, owed_overdue, pending, as_of)
        VALUES ($1, $2, $3, $4, $5, 4242, $6, $7, $8, $9, now() - make_interval(secs => $10))
        """,
        chain, holder, token, RELAYER if holder == "relayer" else TANK, values["balance"],
        values["reserved"], values["owed"], values["owed_overdue"], values["pending"],
        float(values["age"]),
    )  # fmt: skip


async def run(settings: Settings, capsys: pytest.CaptureFixture[str], *, as_json: bool) -> str:
    assert await status_command(argparse.Namespace(json=as_json), settings) == 0
    return capsys.readouterr().out


async def test_status_prints_the_float_of_every_chain(
    make_settings: Callable[..., Settings], pool: Pool, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"STATUS_{secrets.token_hex(3).upper()}"
    settings = one_chain(make_settings, name)
    native = NATIVE_TOKEN.lower()
    await store(
        pool, name, "relayer", USDC_ADDRESS, balance=1_500_250_000, reserved=300_000_000,
        owed=75_500_000, owed_overdue=2, pending=1_000_000_000,
    )  # fmt: skip
    await store(pool, name, "relayer", native, balance=10**17, age=90)
    await store(pool, name, "gas_tank", native, balance=5 * 10**15)

    lines = [line.split() for line in (await run(settings, capsys, as_json=False)).splitlines()]
    header = lines[0]
    assert header == [
        "CHAIN", "HOLDER", "TOKEN", "BALANCE", "RESERVED", "FREE", "OWED", "OVERDUE",
        "PENDING", "COVER", "BLOCK", "AGE",
    ]  # fmt: skip
    ours = {(line[1], line[2]): line for line in lines[1:] if line[0] == name}
    # free 1200.25; 2x of it is 2400.5, less 1000 pending: 1400.5, but at most free
    assert ours[("relayer", "USDC")][3:11] == [
        "1500.25", "300", "1200.25", "75.5", "2", "1000", "1200.25", "4242",
    ]  # fmt: skip
    assert ours[("relayer", "ETH")][3] == "0.1"
    assert ours[("relayer", "ETH")][-1] == "STALE"  # 90 s old, max_age 60 s
    assert ours[("gas_tank", "ETH")][3:10] == ["0.005", "-", "-", "-", "-", "-", "-"]
    assert ours[("relayer", "USDC")][-1] != "STALE"

    rows = [r for r in json.loads(await run(settings, capsys, as_json=True)) if r["chain"] == name]
    usdc = next(r for r in rows if r["symbol"] == "USDC")
    assert {k: usdc[k] for k in ("balance", "reserved", "free", "owed", "pending", "cover")} == {
        "balance": "1500250000", "reserved": "300000000", "free": "1200250000",
        "owed": "75500000", "pending": "1000000000", "cover": "1200250000",
    }  # fmt: skip
    assert (usdc["owed_overdue"], usdc["block"], usdc["stale"]) == (2, 4242, False)
    assert [r["holder"] for r in rows].count("gas_tank") == 1


async def test_intentd_status_at_a_terminal(
    make_settings: Callable[..., Settings], pool: Pool, tmp_path: Path
) -> None:
    """The command as an operator types it (its own process, a config file)."""
    name = f"STATUS_{secrets.token_hex(3).upper()}"
    settings = one_chain(make_settings, name)
    await store(pool, name, "relayer", USDC_ADDRESS, balance=42_000_000)
    config = tmp_path / "status.toml"
    config.write_text(
        'environment = "test"\n'
        f'[database]\nurl = "{settings.database.url.get_secret_value()}"\n'
        f'[kafka]\nbootstrap_servers = "{settings.kafka.bootstrap_servers}"\n'
        f'[chains.{name}]\nchain_id = 990001\nnetwork = "test"\n'
        f'rpc_urls = ["http://127.0.0.1:9"]\nrelayer = "{RELAYER}"\n'
        f'[[chains.{name}.tokens]]\naddress = "{USDC_ADDRESS}"\nsymbol = "USDC"\n'
        'name = "USD Coin"\ndecimals = 6\ncategory = "stablecoin"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENTD")}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "intentd", "--config", str(config), "status"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [line] = [line.split() for line in done.stdout.splitlines() if line.startswith(name)]
    assert line[:4] == [name, "relayer", "USDC", "42"]
