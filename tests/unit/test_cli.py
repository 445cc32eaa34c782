"""The CLI refuses a bad config before doing anything, naming the key and value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BAD = """
[database]
url = "postgresql://127.0.0.1:1/none"
[kafka]
bootstrap_servers = "127.0.0.1:1"
[chains.BASE]
chain_id = 8453
network = "main"
rpc_urls = ["http://127.0.0.1:1"]
confirmations = 0
"""


API_CONFIG = (
    '[database]\nurl = "postgresql://127.0.0.1:1/none"\n'
    '[kafka]\nbootstrap_servers = "127.0.0.1:1"\n'
    '[chains.BASE]\nchain_id = 8453\nnetwork = "main"\nrpc_urls = ["http://127.0.0.1:1"]\n'
)
"""A config the API reads whole, on a main network, with nothing listening."""


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``intentd ARGS`` (``env``: its whole environment, else this process's)."""
    return subprocess.run(
        [sys.executable, "-m", "intentd", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )


def test_bad_config_exits_2_naming_key_and_value(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(BAD)
    result = run("--config", str(config), "migrate")
    assert result.returncode == 2
    assert "chains.BASE.confirmations = 0" in result.stderr


def test_missing_config_file(tmp_path: Path) -> None:
    result = run("--config", str(tmp_path / "nope.toml"), "migrate")
    assert result.returncode == 2
    assert "does not exist" in result.stderr


def test_unknown_chain_for_poll(tmp_path: Path) -> None:
    config = tmp_path / "ok.toml"
    config.write_text(BAD.replace("confirmations = 0", "confirmations = 1"))
    result = run("--config", str(config), "poll", "--chain", "SOLANA")
    assert result.returncode == 2
    assert "unknown chain 'SOLANA'" in result.stderr


def test_keys_xpub_prints_the_extended_public_key_without_a_config(tmp_path: Path) -> None:
    from intentd.custody import IntentKeys
    from intentd.extended_keys import ExtendedPublicKey, IntentAddresses

    mnemonic = "test test test test test test test test test test test junk"
    seed = tmp_path / "seed"
    seed.write_text(mnemonic + "\n")
    seed.chmod(0o600)
    result = run(
        "--config",
        str(tmp_path / "none.toml"),
        "keys",
        "xpub",
        env={**os.environ, "INTENTD_HD_MNEMONIC_FILE": str(seed)},
    )
    assert result.returncode == 0, result.stderr
    xpub = result.stdout.strip()
    assert xpub == IntentKeys(mnemonic).xpub.serialize() and mnemonic not in result.stdout
    # the first intent address of this public test mnemonic is anvil's first account
    addresses = IntentAddresses(ExtendedPublicKey.parse(xpub))
    assert addresses.address(0) == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_keys_xpub_without_the_mnemonic_exits_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENTD_HD_MNEMONIC")}
    result = run("keys", "xpub", env=env)
    assert result.returncode == 2 and "INTENTD_HD_MNEMONIC" in result.stderr


def test_the_api_without_an_xpub_or_mnemonic_refuses_to_start(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(API_CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENTD")}
    result = run("--config", str(config), "api", env=env)
    assert result.returncode == 2
    assert "hd_xpub: not set; give INTENTD_HD_XPUB" in result.stderr


def test_the_api_with_a_malformed_console_key_refuses_to_start(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(API_CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENTD")}
    env["INTENTD_HD_MNEMONIC"] = " ".join(["abandon"] * 11 + ["about"])
    env["INTENTD_CONSOLE_KEY"] = "too short"
    result = run("--config", str(config), "api", env=env)
    assert result.returncode == 2, result.stderr
    assert "console_key (INTENTD_CONSOLE_KEY) = <secret>: not 32 bytes" in result.stderr
    assert "too short" not in result.stderr
