"""Executor secrets: loaded from env or files, checked against the chain's relayer."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentd.adapters.evm.signer import Keyring
from intentd.composition.roles import executor_role
from intentd.custody import IntentKeys
from intentd.domain.actions import SignerKind
from intentd.settings import ConfigError, load_settings
from intentd_dev.devinfra.accounts import ANVIL_MNEMONIC, Role, dev_account

CONFIG = """
[database]
url = "postgresql://x@127.0.0.1/x"
[kafka]
bootstrap_servers = "127.0.0.1:9092"
[chains.BASE_TESTNET]
chain_id = 84532
network = "test"
rpc_urls = ["http://127.0.0.1:8545"]
relayer = "{relayer}"
"""


def settings_with(tmp_path: Path, relayer: str, env: dict[str, str]) -> Keyring:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(relayer=relayer))
    settings = load_settings(config, {"INTENTD_HD_MNEMONIC": ANVIL_MNEMONIC, **env})
    keyring = Keyring.from_settings(settings)
    keyring.check_relayer(settings.chain("BASE_TESTNET"))
    return keyring


def test_keys_come_from_files_and_match_the_relayer(tmp_path: Path) -> None:
    relayer, tank = dev_account(Role.RELAYER), dev_account(Role.GAS_TANK)
    (tmp_path / "r.key").write_text(relayer.private_key + "\n")
    (tmp_path / "r.key").chmod(0o600)
    keyring = settings_with(
        tmp_path,
        relayer.address,
        {
            "INTENTD_RELAYER_KEY_FILE": str(tmp_path / "r.key"),
            "INTENTD_GAS_TANK_KEY": tank.private_key,
        },
    )
    assert keyring.address(SignerKind.RELAYER) == relayer.address.lower()
    assert keyring.address(SignerKind.GAS_TANK) == tank.address.lower()
    assert keyring.address(SignerKind.INTENT, 3) == IntentKeys(ANVIL_MNEMONIC).address(3).lower()
    assert "0x" not in repr(keyring)


def test_a_relayer_key_of_another_address_is_refused(tmp_path: Path) -> None:
    other, tank = dev_account(Role.PAYER), dev_account(Role.GAS_TANK)
    with pytest.raises(ConfigError, match="relayer") as caught:
        settings_with(
            tmp_path,
            dev_account(Role.RELAYER).address,
            {"INTENTD_RELAYER_KEY": other.private_key, "INTENTD_GAS_TANK_KEY": tank.private_key},
        )
    assert other.private_key[2:] not in str(caught.value)


def test_a_missing_key_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="INTENTD_GAS_TANK_KEY"):
        settings_with(
            tmp_path, dev_account(Role.RELAYER).address,
            {"INTENTD_RELAYER_KEY": dev_account(Role.RELAYER).private_key},
        )  # fmt: skip


def test_the_executor_refuses_to_start_with_the_xpub_alone(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(relayer=dev_account(Role.RELAYER).address))
    env = {
        "INTENTD_HD_XPUB": IntentKeys(ANVIL_MNEMONIC).xpub.serialize(),
        "INTENTD_RELAYER_KEY": dev_account(Role.RELAYER).private_key,
        "INTENTD_GAS_TANK_KEY": dev_account(Role.GAS_TANK).private_key,
    }
    settings = load_settings(config, env)
    with pytest.raises(ConfigError, match="hd_mnemonic: not set; give INTENTD_HD_MNEMONIC"):
        executor_role(settings, "BASE_TESTNET")
