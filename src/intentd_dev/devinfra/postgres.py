"""PostgreSQL for development: the machine's server on 127.0.0.1:5432, or one started here.

The machine's server is used when it accepts user ``postgres`` without a password (trust
auth). Otherwise a private server is initialised in ``.local/pg`` (trust auth, TCP on
127.0.0.1:5432 only, no Unix socket) and started with pg_ctl; when the binaries are
missing they are installed with apt-get first. Only that private server is ever stopped.
"""

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Final

import asyncpg

from intentd_dev.devinfra import daemons
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout

COMPONENT: Final = "postgres"
HOST: Final = "127.0.0.1"
PORT: Final = 5432
USER: Final = "postgres"
DATABASE: Final = "intentd"
_READY_TIMEOUT: Final = 30.0


def database_url(database: str = DATABASE, port: int = PORT) -> str:
    return f"postgresql://{USER}@{HOST}:{port}/{database}"


def ensure_postgres(layout: Layout, say: Callable[[str], None], port: int = PORT) -> None:
    """Make a server accept trust connections on `port` and hold the ``intentd`` database."""
    if own_server_pid(layout) is not None:
        _wait_until_accepting(port, layout.log(COMPONENT))
        say(f"postgres: running (own server in {layout.pg_data}, port {port})")
    elif _listening(port):
        _wait_until_accepting(port, None)
        say(f"postgres: using the server already on {HOST}:{port}")
    else:
        _start_own_server(layout, say, port)
    if _create_database(port, DATABASE):
        say(f"postgres: created database {DATABASE}")


def stop_postgres(layout: Layout) -> bool:
    """Stop the server in ``.local/pg`` if it runs; the machine's own is left alone."""
    if own_server_pid(layout) is None:
        return False
    pg_ctl = str(_bindir(layout) / "pg_ctl")
    _run_as_owner(layout, [pg_ctl, "-D", str(layout.pg_data), "-m", "fast", "-w", "stop"])
    return True


def postgres_status(layout: Layout, port: int = PORT) -> tuple[bool, str]:
    """Whether a usable server runs, and one line that says which."""
    pid = own_server_pid(layout)
    if pid is not None:
        return True, f"running (own server, pid {pid}, data {layout.pg_data})"
    if _listening(port):
        reason = _connect_problem(port)
        if reason is None:
            return True, f"running (the machine's server on {HOST}:{port})"
        return False, f"a server on {HOST}:{port} refuses us: {reason}"
    return False, "stopped"


def own_server_pid(layout: Layout) -> int | None:
    """The pid of the postmaster of ``.local/pg`` if it is running."""
    try:
        pid = int((layout.pg_data / "postmaster.pid").read_text().split("\n", 1)[0])
    except (FileNotFoundError, PermissionError, ValueError):
        return None
    return pid if daemons.is_alive(pid, "postgres") else None


def _listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


def _connect_problem(port: int, database: str = "postgres") -> str | None:
    """None if user postgres can connect without a password, else why not."""

    async def attempt() -> None:
        connection = await asyncpg.connect(
            host=HOST, port=port, user=USER, database=database, timeout=3.0
        )
        await connection.close()

    try:
        asyncio.run(attempt())
    except (OSError, TimeoutError, asyncpg.PostgresError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def _wait_until_accepting(port: int, log: Path | None) -> None:
    """Wait while the server starts up; fail at once on an authentication error."""
    deadline = time.monotonic() + _READY_TIMEOUT
    while (reason := _connect_problem(port)) is not None:
        if "password" in reason or "Authorization" in reason or "pg_hba" in reason:
            raise InfraError(
                COMPONENT,
                f"the server on {HOST}:{port} refuses user {USER} without a password ({reason});"
                f" allow trust auth for {HOST} in its pg_hba.conf, or stop it",
                log,
            )
        if time.monotonic() > deadline:
            raise InfraError(COMPONENT, f"no connection to {HOST}:{port}: {reason}", log)
        time.sleep(0.2)


def recreate_database(name: str, port: int = PORT) -> None:
    """Drop database `name` (closing its connections) and create it empty."""

    async def recreate() -> None:
        connection = await asyncpg.connect(host=HOST, port=port, user=USER, database="postgres")
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()

    asyncio.run(recreate())


def _create_database(port: int, name: str) -> bool:
    """Create database `name` unless it exists; True if it was created."""

    async def create() -> bool:
        connection = await asyncpg.connect(host=HOST, port=port, user=USER, database="postgres")
        try:
            if await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
                return False
            try:
                await connection.execute(f'CREATE DATABASE "{name}"')
            except asyncpg.DuplicateDatabaseError:
                return False  # created concurrently
            return True
        finally:
            await connection.close()

    return asyncio.run(create())


def _start_own_server(layout: Layout, say: Callable[[str], None], port: int) -> None:
    log = layout.log(COMPONENT)
    bindir = _bindir(layout, install_with=say)
    data = layout.pg_data
    if not (data / "PG_VERSION").exists():
        say(f"postgres: initialising {data}")
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        _give_to_owner(data)
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust"]
        _run_as_owner(layout, [*initdb, "--encoding=UTF8", "--no-locale"])
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(_server_settings(port))
    log.touch()
    _give_to_owner(log)
    pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60"]
    _run_as_owner(layout, [*pg_ctl, "start"])
    _wait_until_accepting(port, log)
    say(f"postgres: started own server on {HOST}:{port} (data {data})")


def _server_settings(port: int) -> str:
    return (
        "\n# Added by intentd_dev.devinfra: a private dev server, over TCP on 127.0.0.1 only.\n"
        f"listen_addresses = '{HOST}'\nport = {port}\nunix_socket_directories = ''\n"
    )


def _bindir(layout: Layout, install_with: Callable[[str], None] | None = None) -> Path:
    """The directory of initdb and pg_ctl, installing PostgreSQL if allowed and needed."""
    found = _find_bindir()
    if found is None and install_with is not None:
        _apt_install(layout, install_with)
        found = _find_bindir()
    if found is None:
        raise InfraError(COMPONENT, "no initdb/pg_ctl found; install PostgreSQL")
    return found


def _find_bindir() -> Path | None:
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in path.parent.name.split(".") if part.isdigit())

    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for candidate in debian:
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _apt_install(layout: Layout, say: Callable[[str], None]) -> None:
    log = layout.log(f"{COMPONENT}-install")
    apt_get = shutil.which("apt-get")
    if apt_get is None or os.geteuid() != 0:
        raise InfraError(COMPONENT, "PostgreSQL is not installed; install it (as root: apt-get)")
    say(f"postgres: installing PostgreSQL with apt-get (log {log})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt_get, "install", "-y", "--no-install-recommends"]
    with log.open("a") as out:
        for argv in ([apt_get, "update"], [*install, "postgresql-common"]):
            _logged_run(argv, out, env, log)
        # Debian would create and start a cluster "main" on port 5432 with password auth,
        # which would take the port our own server needs: tell it not to.
        _disable_main_cluster(Path("/etc/postgresql-common/createcluster.conf"))
        _logged_run([*install, "postgresql"], out, env, log)


def _disable_main_cluster(conf: Path) -> None:
    text = conf.read_text() if conf.exists() else ""
    if "\ncreate_main_cluster = false" not in f"\n{text}":
        conf.write_text(text + "\ncreate_main_cluster = false\n")


def _logged_run(argv: Sequence[str], out: IO[str], env: dict[str, str], log: Path) -> None:
    completed = subprocess.run(
        argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, check=False
    )
    if completed.returncode != 0:
        raise InfraError(COMPONENT, f"`{' '.join(argv)}` failed ({completed.returncode})", log)


def _server_user() -> pwd.struct_passwd | None:
    """The account the server runs as: postgres when we are root (it refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        raise InfraError(COMPONENT, "running as root but there is no `postgres` user") from None


def _give_to_owner(path: Path) -> None:
    user = _server_user()
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def _run_as_owner(layout: Layout, argv: Sequence[str]) -> None:
    """Run a PostgreSQL tool as the server's user; its output is appended to the log."""
    user = _server_user()
    log = layout.log(COMPONENT)
    with log.open("a") as out:
        completed = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=layout.pg_data,
            env={**os.environ, "LC_ALL": "C"},
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            check=False,
        )
    if completed.returncode != 0:
        name = Path(argv[0]).name
        raise InfraError(COMPONENT, f"{name} failed with status {completed.returncode}", log)
