"""SIGTERM at any moment: every role stops within its deadline and leaves nothing half-done.

Start-up: each command (``run`` and every role alone, ``api --workers 2`` too) gets
SIGTERM at random moments after it is spawned (seeded; the seed is printed, and
``SIGTERM_SEED=n`` replays a run). Busy: ``intentd run`` gets SIGTERM while intents
are created through the API and paid on chain, is started again, and every payment
is then credited exactly once and every intent the API answered 201 is stored.

Every stop is checked the same way (docs/operations.md, Stopping): the process
exits 0 within ``process.drain_seconds`` plus a margin (or, before intentd wrote a
single line, by the default action of SIGTERM: nothing had started), no advisory
lock of the database is left held and no process it started is left behind.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support import ROOT, daemon_env

from intentd.adapters.postgres import Pool
from intentd.settings import Settings

pytestmark = pytest.mark.e2e

DRAIN_SECONDS = 4.0
MARGIN = 6.0  # interpreter exit, pool and producer close, on a loaded 2-core machine
WEBHOOK_KEY = "11" * 32
COMMANDS: list[list[str]] = [
    ["run", "--no-migrate"],
    ["poll", "--chain", "BASE_TESTNET"],
    ["execute", "--chain", "BASE_TESTNET"],
    ["lifecycle"],
    ["webhooks"],
    ["api"],
    ["api", "--workers", "2"],
]
POINTS = 3  # start-up moments per command
START_WINDOW = 5.0  # seconds after spawn within which SIGTERM is sent
INTERPRETER_START = 0.5  # before intentd.__main__ installs its handler (about 0.1 s)


@dataclass(frozen=True)
class Stopped:
    command: str
    delay: float
    code: int
    seconds: float
    log: Path


def seed() -> int:
    chosen = int(os.environ.get("SIGTERM_SEED") or secrets.randbelow(10**6))
    print(f"\nSIGTERM_SEED={chosen}")
    return chosen


def spawn(args: list[str], env: dict[str, str], log: Path, mark: str) -> subprocess.Popen[bytes]:
    """``intentd ARGS`` with ``mark`` in its environment (its children inherit it)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "intentd", "--config", str(ROOT / "config/local.toml"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**env, "INTENTD_TEST_MARK": mark},
            cwd=ROOT,
        )


def marked(mark: str) -> list[int]:
    """Processes alive with ``mark`` in their environment."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"INTENTD_TEST_MARK={mark}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


async def terminate(process: subprocess.Popen[bytes], deadline: float) -> tuple[int, float]:
    """SIGTERM; (exit status, seconds until exit). SIGKILL and fail past ``deadline``."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    while process.poll() is None:
        if time.monotonic() - sent > deadline:
            process.kill()
            process.wait()
            raise AssertionError(f"no exit within {deadline} s of SIGTERM")
        await asyncio.sleep(0.02)
    return process.returncode, time.monotonic() - sent


async def stop_at(args: list[str], delay: float, env: dict[str, str], log: Path) -> Stopped:
    mark = secrets.token_hex(6)
    process = spawn(args, env, log, mark)
    await asyncio.sleep(delay)
    try:
        code, seconds = await terminate(process, DRAIN_SECONDS + MARGIN)
    except AssertionError as exc:
        raise AssertionError(f"{args} at {delay:.2f} s: {exc}\n{log.read_text()[-3000:]}") from None
    for _ in range(50):  # a worker told of its parent's death exits on its own
        if not marked(mark):
            break
        await asyncio.sleep(0.1)
    left = marked(mark)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{args} at {delay:.2f} s left processes behind\n{log.read_text()[-3000:]}"
    return Stopped(" ".join(args), delay, code, seconds, log)


def assert_clean(stopped: Stopped, *, drained: bool) -> None:
    """Exit 0 within the deadline, no traceback; with ``drained``, every role
    returned before the drain deadline (nothing had to be cancelled)."""
    text = stopped.log.read_text()
    where = f"{stopped.command} stopped {stopped.delay:.2f} s after spawn ({stopped.log.name})"
    if stopped.code == -signal.SIGTERM:  # the default action: only before intentd ran
        assert stopped.delay < INTERPRETER_START, f"{where}: killed by SIGTERM\n{text[-3000:]}"
    else:
        assert stopped.code == 0, f"{where}: exit {stopped.code}\n{text[-3000:]}"
    assert stopped.seconds < DRAIN_SECONDS + MARGIN, where
    assert "Traceback" not in text, f"{where}\n{text[-3000:]}"
    if drained:
        assert "cancelling" not in text, f"{where}: not drained in time\n{text[-3000:]}"


async def advisory_locks(pool: Pool) -> int:
    count: int = await pool.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    return count


@pytest.mark.timeout(180)
async def test_sigterm_at_random_moments_of_start_up(
    own_stack: tuple[Settings, Pool], tmp_path: Path
) -> None:
    settings, pool = own_stack
    env = daemon_env(
        settings,
        INTENTD_WEBHOOK_KEY=WEBHOOK_KEY,
        INTENTD__PROCESS__DRAIN_SECONDS=str(DRAIN_SECONDS),
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
    )
    rng = random.Random(seed())
    plan = [(args, rng.uniform(0, START_WINDOW)) for args in COMMANDS for _ in range(POINTS)]
    rng.shuffle(plan)
    results: list[Stopped] = []
    for at in range(0, len(plan), 3):  # three at once: a loaded 2-core machine
        batch = plan[at : at + 3]
        results += await asyncio.gather(
            *(
                stop_at(args, delay, env, tmp_path / f"{at + n}.log")
                for n, (args, delay) in enumerate(batch)
            )
        )
    for stopped in sorted(results, key=lambda s: (s.command, s.delay)):
        print(
            f"  {stopped.command:32} SIGTERM at {stopped.delay:4.2f} s:"
            f" exit {stopped.code:4} after {stopped.seconds:5.2f} s ({stopped.log.name})"
        )
    for stopped in results:
        assert_clean(stopped, drained=True)
    assert await advisory_locks(pool) == 0
