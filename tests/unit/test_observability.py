"""Logs are JSON lines, ours and the libraries', and never carry secrets, even in tracebacks."""

from __future__ import annotations

import json
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


LIBRARY_SCRIPT = """
import logging
from intentd.observability import configure_logging
configure_logging("info")
logging.getLogger("uvicorn.error").info("Started server process [%d]", 7)
logging.getLogger("aiokafka").debug("below the level")
def handler(authorization):
    raise RuntimeError("boom")
try:
    handler("Bearer itd_live_SECRETSECRETSECRET")
except RuntimeError:
    logging.getLogger("uvicorn.error").exception("Exception in ASGI application")
"""


def test_library_logs_are_json_lines_too() -> None:
    result = subprocess.run(
        [sys.executable, "-c", LIBRARY_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(line["logger"], line["level"], line["event"]) for line in lines] == [
        ("uvicorn.error", "info", "Started server process [7]"),
        ("uvicorn.error", "error", "Exception in ASGI application"),
    ]
    assert lines[1]["exception"][0]["exc_type"] == "RuntimeError"
    assert "SECRETSECRET" not in result.stderr
