"""Which chains charge an OP-stack L1 data fee (``chains.<NAME>.l1_fee``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentd.settings import ConfigError, load_settings

ENV = {"INTENTD_DATABASE_URL": "postgresql://u:pw@db:5432/intentd", "INTENTD_HD_MNEMONIC": "w"}


def config(tmp_path: Path, chain_id: int, extra: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        '[database]\nurl = "${INTENTD_DATABASE_URL}"\n[kafka]\nbootstrap_servers = "k:9092"\n'
        f'[chains.C]\nchain_id = {chain_id}\nnetwork = "test"\nrpc_urls = ["https://rpc.example"]\n'
        f"{extra}"
    )
    return path


@pytest.mark.parametrize(
    ("chain_id", "kind"),
    [
        (8453, "op_stack"),  # Base
        (84532, "op_stack"),  # Base Sepolia
        (10, "op_stack"),  # OP Mainnet
        (11155420, "op_stack"),  # OP Sepolia
        (1, "none"),
        (421614, "none"),  # Arbitrum Sepolia: its L1 cost is in gas, not on top
        (31337, "none"),  # anvil
    ],
)
def test_the_default_follows_the_known_op_stack_chain_ids(
    tmp_path: Path, chain_id: int, kind: str
) -> None:
    assert load_settings(config(tmp_path, chain_id), ENV).chains["C"].l1_fee == kind


def test_an_explicit_setting_wins_both_ways(tmp_path: Path) -> None:
    anvil_on_base_id = config(tmp_path, 84532, 'l1_fee = "none"\n')
    assert load_settings(anvil_on_base_id, ENV).chains["C"].l1_fee == "none"
    other_op_chain = config(tmp_path, 7777777, 'l1_fee = "op_stack"\n')
    assert load_settings(other_op_chain, ENV).chains["C"].l1_fee == "op_stack"


def test_the_environment_can_override_it(tmp_path: Path) -> None:
    env = {**ENV, "INTENTD__CHAINS__C__L1_FEE": "none"}
    assert load_settings(config(tmp_path, 8453), env).chains["C"].l1_fee == "none"


def test_an_unknown_kind_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"chains\.C\.l1_fee"):
        load_settings(config(tmp_path, 8453, 'l1_fee = "arbitrum"\n'), ENV)


def test_the_margin_is_an_execution_setting(tmp_path: Path) -> None:
    settings = load_settings(config(tmp_path, 8453, "[execution]\nl1_fee_margin_bps = 5000\n"), ENV)
    assert settings.execution.l1_fee_margin_bps == 5_000
    assert load_settings(config(tmp_path, 8453), ENV).execution.l1_fee_margin_bps == 2_500


def test_the_local_dev_chains_charge_no_l1_fee() -> None:
    root = Path(__file__).resolve().parents[2]
    text = (root / "config" / "local.toml").read_text()
    section = text.split("[chains.BASE_TESTNET]", 1)[1].split("[chains.", 1)[0]
    assert 'l1_fee = "none"' in section  # anvil on 84532 has no GasPriceOracle
