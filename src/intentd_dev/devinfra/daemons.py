"""Background processes that outlive the command that started them, tracked by pidfiles.

A daemon is spawned in its own session with stdin from /dev/null and stdout and stderr
appended to its log. Its pidfile holds the pid; a pid counts as ours only while the
process is alive and its command line still names the expected program, so a recycled
pid is never signalled.
"""

import contextlib
import os
import shlex
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Spawned:
    """A daemon just started by this process (so it can be reaped while we wait for it)."""

    pid: int
    log: Path

    def exit_status(self) -> int | None:
        """The exit status if the process has ended (reaping it), else None."""
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return -1
        if pid == 0:
            return None
        return os.waitstatus_to_exitcode(status)


def spawn(
    argv: Sequence[str],
    *,
    log: Path,
    pidfile: Path,
    env: Mapping[str, str] | None = None,
) -> Spawned:
    """Start `argv` (argv[0] an absolute path) as a daemon and record its pid in `pidfile`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        out.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {shlex.join(argv)}\n".encode())
        out.flush()
        pid = os.posix_spawn(
            argv[0],
            list(argv),
            dict(os.environ if env is None else env),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                (os.POSIX_SPAWN_DUP2, out.fileno(), 2),
            ],
            setsid=True,
        )
    pidfile.write_text(f"{pid}\n")
    return Spawned(pid, log)


def is_alive(pid: int, program: str) -> bool:
    """True if `pid` is a live (non-zombie) process whose command line contains `program`."""
    proc = Path("/proc") / str(pid)
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in {"Z", "X"} and program.encode() in cmdline


def running_pid(pidfile: Path, program: str) -> int | None:
    """The pid recorded in `pidfile` if that process is alive and runs `program`."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if is_alive(pid, program) else None


def terminate(pid: int, program: str, timeout: float = 10.0) -> None:
    """Send SIGTERM, wait up to `timeout` seconds for the process to end, then SIGKILL it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while is_alive(pid, program):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        _reap(pid)
        time.sleep(0.05)


def stop(pidfile: Path, program: str, timeout: float = 10.0) -> bool:
    """Stop the daemon recorded in `pidfile` if it is running; True if one was stopped."""
    pid = running_pid(pidfile, program)
    if pid is not None:
        terminate(pid, program, timeout)
    pidfile.unlink(missing_ok=True)
    return pid is not None


def _reap(pid: int) -> None:
    """Collect the exit status if `pid` is our own child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
