"""Tokens checked against their contracts on the dev chains (read-only calls)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import CHAINS, chain_section

from intentd.adapters.evm.token_check import check_tokens
from intentd.settings import ConfigError, Settings

pytestmark = pytest.mark.integration


async def test_the_dev_tokens_match_their_config(settings: Settings) -> None:
    await check_tokens(settings, list(settings.chains))


async def test_a_wrong_decimals_refuses_to_start_naming_the_key(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> None:
    chains = {name: chain_section(infra, name, cid) for name, cid in CHAINS.items()}
    chains["BASE_TESTNET"]["tokens"][1]["decimals"] = 18  # USDT has 6 on chain
    chains["ARBITRUM_TESTNET"]["tokens"][0]["symbol"] = "USDC.e"
    settings = make_settings(chains=chains)
    with pytest.raises(ConfigError) as raised:
        await check_tokens(settings, list(settings.chains))
    message = str(raised.value)
    assert "chains.BASE_TESTNET.tokens.1.decimals = 18: " in message and "has 6 decimals" in message
    assert "chains.ARBITRUM_TESTNET.tokens.0.symbol = 'USDC.e': " in message


async def test_an_rpc_of_another_chain_is_not_trusted(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> None:
    chains = {name: chain_section(infra, name, cid) for name, cid in CHAINS.items()}
    chains["BASE_TESTNET"]["rpc_urls"] = [infra["INTENTD_ARBITRUM_TESTNET_RPC_URL"]]
    settings = make_settings(chains=chains)
    with pytest.raises(Exception, match="answers chain 421614, not 84532"):
        await check_tokens(settings, ["BASE_TESTNET"])


def test_the_executor_refuses_to_start_on_a_wrong_decimals(
    infra: dict[str, str], tmp_path: Path
) -> None:
    usdc = infra["INTENTD_BASE_TESTNET_USDC"]
    config = tmp_path / "c.toml"
    config.write_text(
        '[database]\nurl = "postgresql://127.0.0.1:1/none"\n'  # never reached
        '[kafka]\nbootstrap_servers = "127.0.0.1:1"\n'
        '[chains.BASE_TESTNET]\nchain_id = 84532\nnetwork = "test"\n'
        f'rpc_urls = ["{infra["INTENTD_BASE_TESTNET_RPC_URL"]}"]\n'
        f'relayer = "{infra["INTENTD_RELAYER_ADDRESS"]}"\n'
        f'[[chains.BASE_TESTNET.tokens]]\naddress = "{usdc}"\nsymbol = "USDC"\n'
        'name = "Test USD Coin"\ndecimals = 18\ncategory = "stablecoin"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENTD")}
    env.update(
        INTENTD_RELAYER_KEY_FILE=infra["INTENTD_RELAYER_KEY_FILE"],
        INTENTD_GAS_TANK_KEY_FILE=infra["INTENTD_GAS_TANK_KEY_FILE"],
        INTENTD_HD_MNEMONIC="test test test test test test test test test test test junk",
    )
    result = subprocess.run(
        [sys.executable, "-m", "intentd", "--config", str(config), "execute", "--chain",
         "BASE_TESTNET"],
        capture_output=True, text=True, check=False, timeout=60, env=env,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "chains.BASE_TESTNET.tokens.0.decimals = 18: " in result.stderr
