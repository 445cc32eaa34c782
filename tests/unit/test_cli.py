"""The CLI refuses a bad config before doing anything, naming the key and value."""

from __future__ import annotations

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


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "intentd", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
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
