"""``python -m intentd_dev.demo`` as ``make demo`` runs it, on a test's own resources."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT, daemon_env

from intentd.settings import Settings
from intentd_dev.devinfra.anvil import free_port


async def start_demo(settings: Settings, log: Path, *args: str) -> asyncio.subprocess.Process:
    """The demo on ``settings``' resources (free ports for the API and the metrics; the
    demo makes its own webhook key), ``args`` added; the daemon's log is ``log``, the
    demo's output (stderr too) its stdout pipe."""
    prefix = settings.kafka.topic_prefix
    env = daemon_env(
        settings,
        INTENTD__API__PORT=str(free_port()),
        INTENTD__OBSERVABILITY__METRICS_PORT=str(free_port()),
        INTENTD__WEBHOOKS__GROUP=f"{prefix}-webhooks",
    )
    env.pop("INTENTD_WEBHOOK_KEY", None)  # the demo makes its own
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "intentd_dev.demo",
        "--config",
        "config/local.toml",
        "--log",
        str(log),
        *args,
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
