"""anvil (Foundry's dev chain, from npm ``@foundry-rs/anvil``): finding it, starting it, probing it.

Every instance listens on 127.0.0.1 and uses anvil's default mnemonic, whose accounts are
public dev keys (see `intentd_dev.devinfra.accounts`). anvil runs with ``--quiet`` because its
banner prints those private keys and no key may reach a log; its log keeps only errors.
"""

import contextlib
import http.client
import json
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Final, Self

from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout, find_layout

HOST: Final = "127.0.0.1"
_PORT_ATTEMPTS: Final = 3
_ADDRESS_IN_USE: Final = "Address already in use"


def anvil_binary(layout: Layout | None = None) -> Path:
    """The anvil executable installed by ``npm ci`` (the native binary when present)."""
    modules = (layout or find_layout()).node_modules
    native = sorted(modules.glob("@foundry-rs/anvil-*/bin/anvil"))
    if native:
        return native[0]
    wrapper = modules / ".bin" / "anvil"
    if wrapper.exists():
        return wrapper
    raise InfraError("anvil", f"{wrapper} is missing: run `make install`")


def anvil_argv(
    binary: Path,
    chain_id: int,
    port: int,
    block_time: float | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command line of one instance; `block_time` None means a block per transaction."""
    argv = [str(binary), "--host", HOST, "--port", str(port), "--chain-id", str(chain_id)]
    argv.append("--quiet")
    if block_time is not None:
        if block_time <= 0:
            raise ValueError(f"block_time must be positive, not {block_time}")
        argv += ["--block-time", f"{block_time:g}"]
    return [*argv, *extra_args]


def rpc_url(port: int) -> str:
    return f"http://{HOST}:{port}"


def rpc_chain_id(port: int, timeout: float = 1.0) -> int | None:
    """The chain id served on `port` of 127.0.0.1, or None if nothing answers eth_chainId."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []})
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        connection.request("POST", "/", body, {"Content-Type": "application/json"})
        reply = json.loads(connection.getresponse().read())
        return int(reply["result"], 16)
    except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError):
        return None
    finally:
        connection.close()


def wait_for_chain(
    port: int,
    chain_id: int,
    *,
    exit_status: Callable[[], int | None],
    timeout: float,
    component: str,
    log: Path | None,
) -> None:
    """Return once `port` serves `chain_id`; raise `InfraError` if the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = exit_status()
        if status is not None:
            raise InfraError(component, f"anvil exited with status {status}", log)
        served = rpc_chain_id(port, timeout=0.5)
        if served == chain_id:
            return
        if served is not None:
            raise InfraError(component, f"port {port} serves chain {served}, not {chain_id}", log)
        time.sleep(0.05)
    raise InfraError(component, f"anvil did not answer on port {port} within {timeout:.0f}s", log)


def port_in_use(port: int) -> bool:
    """True if something accepts TCP connections on `port` of 127.0.0.1."""
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


class AnvilProcess:
    """An anvil instance owned by the caller; `stop` it (or use it as a context manager)."""

    def __init__(
        self, process: subprocess.Popen[bytes], output: IO[bytes], chain_id: int, port: int
    ) -> None:
        self._process = process
        self._output = output
        self.chain_id = chain_id
        self.port = port

    @property
    def url(self) -> str:
        """The JSON-RPC endpoint, ``http://127.0.0.1:<port>``."""
        return rpc_url(self.port)

    @property
    def pid(self) -> int:
        return self._process.pid

    def output(self) -> str:
        """What anvil wrote to stdout and stderr so far (with ``--quiet``: errors only)."""
        self._output.flush()
        self._output.seek(0)
        return self._output.read().decode(errors="replace")

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate anvil (SIGKILL after `timeout` seconds) and release its output file."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._output.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def start_anvil(
    chain_id: int,
    port: int | None = None,
    block_time: float | None = None,
    extra_args: Sequence[str] = (),
    *,
    timeout: float = 15.0,
) -> AnvilProcess:
    """Start an ephemeral anvil serving `chain_id`; returns once ``eth_chainId`` answers.

    `port` None picks a free port. `block_time` None mines one block per transaction
    (automine); otherwise a block every `block_time` seconds. The caller must `stop` the
    instance; it is a child of the calling process and holds its state in memory only.
    Raises `InfraError` with anvil's output if it does not come up.
    """
    binary = anvil_binary()

    def start(chosen: int) -> AnvilProcess:
        argv = anvil_argv(binary, chain_id, chosen, block_time, extra_args)
        return _start(argv, chain_id, chosen, timeout)

    if port is not None:
        return start(port)
    for _ in range(_PORT_ATTEMPTS - 1):
        with contextlib.suppress(_PortInUse):
            return start(free_port())
    return start(free_port())


class _PortInUse(InfraError):
    """The port picked for an ephemeral instance was taken before anvil could bind it."""


def _start(argv: list[str], chain_id: int, port: int, timeout: float) -> AnvilProcess:
    component = f"anvil (chain {chain_id}, port {port})"
    if port_in_use(port):  # else the readiness probe could be answered by that process
        raise _PortInUse(component, f"port {port} is already in use")
    output = tempfile.TemporaryFile(prefix="anvil-")  # noqa: SIM115 - AnvilProcess closes it
    try:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
        )
    except OSError:
        output.close()
        raise
    instance = AnvilProcess(process, output, chain_id, port)
    try:
        wait_for_chain(
            port, chain_id, exit_status=process.poll, timeout=timeout, component=component, log=None
        )
    except InfraError as error:
        text = instance.output().strip() or "no output"
        instance.stop()
        kind = _PortInUse if _ADDRESS_IN_USE in text else InfraError
        raise kind(component, f"{error.message}: {text}") from None
    return instance
