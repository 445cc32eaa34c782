"""The ``[liquidity]`` section and the float thresholds of chains and tokens: defaults,
and bad values refused naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentd.settings import ConfigError, load_settings

ENV = {"INTENTD_DATABASE_URL": "postgresql://u:pw@db:5432/intentd", "INTENTD_HD_MNEMONIC": "w"}
USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"


def config(tmp_path: Path, chain: str = "", tail: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        '[database]\nurl = "${INTENTD_DATABASE_URL}"\n[kafka]\nbootstrap_servers = "k:9092"\n'
        '[chains.C]\nchain_id = 1001\nnetwork = "test"\nrpc_urls = ["https://rpc.example"]\n'
        f"{chain}"
        f'tokens = [{{ address = "{USDC}", symbol = "USDC", name = "USD Coin", decimals = 6,'
        f' category = "stablecoin", float_alert_below = "2500.5" }}]\n'
        f"{tail}"
    )
    return path


def test_defaults_and_thresholds_in_base_units(tmp_path: Path) -> None:
    settings = load_settings(config(tmp_path, 'gas_tank_alert_below = "0.05"\n'), ENV)
    liquidity = settings.liquidity
    assert (liquidity.admission, liquidity.overcommit_bps, liquidity.prefill_wait) == (
        True, 20_000, 900.0,
    )  # fmt: skip
    assert (liquidity.max_age, liquidity.read_interval, liquidity.view_refresh) == (60, 5, 1)
    chain = settings.chains["C"]
    assert chain.tokens[0].float_alert_below_units == 2_500_500_000
    assert chain.native.float_alert_below_units is None
    assert chain.gas_tank_alert_below_units == 5 * 10**16


@pytest.mark.parametrize(
    ("chain", "tail", "named"),
    [
        ('gas_tank_alert_below = "0.1234567890123456789"\n', "", r"gas_tank_alert_below"),
        ('gas_tank_alert_below = "-1"\n', "", r"gas_tank_alert_below"),
        ("", "[liquidity]\novercommit_bps = 9999\n", r"liquidity\.overcommit_bps"),
        (
            "",
            "[liquidity]\nmax_age = 8\n",
            r"liquidity\.max_age \(8\.0 s\) must be at least twice liquidity\.read_interval",
        ),
        ("", "[liquidity]\nprefill_wait = -1\n", r"liquidity\.prefill_wait"),
        ("", "[liquidity]\nadmision = false\n", r"liquidity\.admision"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(
    tmp_path: Path, chain: str, tail: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load_settings(config(tmp_path, chain, tail), ENV)


def test_a_threshold_more_precise_than_its_token_is_refused(tmp_path: Path) -> None:
    path = config(tmp_path)
    path.write_text(path.read_text().replace('"2500.5"', '"0.0000001"'))
    with pytest.raises(ConfigError, match="float_alert_below of USDC"):
        load_settings(path, ENV)


def test_the_environment_turns_admission_off(tmp_path: Path) -> None:
    env = {**ENV, "INTENTD__LIQUIDITY__ADMISSION": "false"}
    assert load_settings(config(tmp_path), env).liquidity.admission is False
