"""The ``api`` role: uvicorn (httptools) serving the app until the process's stop event.

Signals belong to ``runtime.run_roles``; uvicorn's own handlers are not installed.
At stop, uvicorn's graceful shutdown answers the requests in flight; if the role is
cancelled first, those requests are cancelled unanswered.
The workers of ``intentd api --workers N`` (``api.workers``) open the port with
``SO_REUSEPORT`` (the kernel spreads connections); otherwise a port in use is an
error, so two unrelated daemons never share one silently.

Its bounds (``api.capacity``): connections, the time a request's headers may take,
idle keep-alive connections. Its readiness (``/readyz``): ready once serving; not
ready while PostgreSQL is down, as the process's :class:`~intentd.supervision.Health`
says for every role. A worker of ``intentd api --workers N`` tells its parent each
change (``api.workers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator

import structlog
import uvicorn
from fastapi import FastAPI

from intentd.api.capacity import guarded_protocol
from intentd.api.workers import report_readiness
from intentd.runtime import READINESS, Role
from intentd.settings import Settings

__all__ = ["Server", "api_role", "bind", "tell_readiness"]

log = structlog.get_logger()
READY_NAME = "api"
_LIFESPAN_SHUTDOWN_SECONDS = 2.0


class Server(uvicorn.Server):
    """uvicorn without its signal handlers (signals belong to runtime.run_roles)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket (port 0: any free port); ``reuse_port`` lets several
    processes of one ``intentd api --workers N`` share the port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


async def _abandon_requests(server: Server) -> None:
    """The role is cancelled (drain deadline, second signal), and uvicorn with it,
    before its own shutdown ran: cancel the requests in flight (none of them has
    answered yet; a create's write that started still commits or not as a whole,
    ``intents.writer``), close their connections, and shut the app down (its lifespan
    closes what it opened), so nothing outlives the process's pool."""
    server.should_exit = server.force_exit = True
    for task in list(server.server_state.tasks):
        task.cancel()
    for connection in list(server.server_state.connections):
        connection.shutdown()
    if server.started:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.lifespan.shutdown(), _LIFESPAN_SHUTDOWN_SECONDS)


def tell_readiness(ready: bool) -> None:
    """Ready once serving (the database down is the health's to say, in ``/readyz``);
    each change told to the parent of ``intentd api --workers N``, if any."""
    READINESS.ready(READY_NAME)
    report_readiness(ready)


def api_role(settings: Settings, app: FastAPI, *, sock: socket.socket | None = None) -> Role:
    """Serve ``app`` (built by the composition root, ``composition.api.api_app``, with
    :func:`tell_readiness` as its ``on_readiness``) on ``sock`` (or
    ``api.host``:``api.port``) until stop."""

    async def role(stop: asyncio.Event) -> None:
        READINESS.expect(READY_NAME)
        listener = sock if sock is not None else bind(settings.api.host, settings.api.port)
        config = uvicorn.Config(
            app,
            http=guarded_protocol(settings.api.header_timeout, settings.api.max_connections),
            timeout_keep_alive=settings.api.keep_alive_timeout,
            lifespan="on",
            access_log=False,
            log_config=None,
            server_header=False,
            timeout_graceful_shutdown=10,
        )
        server = Server(config)
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        host, port = listener.getsockname()[:2]
        log.info("api listening", host=host, port=port)
        try:
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
            server.should_exit = True
            stopping.cancel()
            await serving
        except asyncio.CancelledError:
            await _abandon_requests(server)
            raise
        finally:
            if sock is None:
                listener.close()
        log.info("api stopped")

    return role
