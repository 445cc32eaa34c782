"""Logs never carry secrets, even in tracebacks of unexpected errors."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import structlog
from intentd.observability import configure_logging
configure_logging("info")
def handler(authorization):
    raise RuntimeError("boom")
try:
    handler("Bearer itd_live_SECRETSECRETSECRET")
except RuntimeError:
    structlog.get_logger().exception("request failed")
"""


def test_tracebacks_do_not_log_frame_locals() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    assert "request failed" in result.stderr
    assert "RuntimeError" in result.stderr
    assert "SECRETSECRET" not in result.stderr
