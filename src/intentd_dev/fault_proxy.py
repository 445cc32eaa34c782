"""A TCP proxy that fails on command: the dependency outages tests and the chaos run need.

:class:`TcpFaultProxy` listens on a local port and forwards each connection to one
upstream (PostgreSQL, a broker, an RPC node). While it passes traffic it is invisible.
On command it:

- **cuts**: resets every open connection (TCP RST, as a restarting server or a
  dropped NAT entry does) and refuses new ones (the listening socket is closed, so a
  connect gets ``ECONNREFUSED``) until :meth:`restore`, or for ``seconds``;
- **stalls**: keeps every connection open and accepts new ones, but forwards nothing
  in either direction (a hung server, a black-holed route) until :meth:`restore`; the
  bytes held meanwhile are forwarded then, in order.

It listens on the same port again after a cut, so clients reconnect to the address
they were given. Dev tooling only: it runs in the caller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

__all__ = ["TcpFaultProxy", "proxy_for", "through_proxy"]

_CHUNK = 65536


class TcpFaultProxy:
    """Forwards ``host:port`` (``port`` 0 picks a free one) to ``upstream``."""

    def __init__(self, upstream: tuple[str, int], *, host: str = "127.0.0.1", port: int = 0):
        self._upstream = upstream
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._links: set[_Link] = set()
        self._restore_at: asyncio.TimerHandle | None = None
        self.connections = 0
        """Connections accepted and forwarded since start."""

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        return f"{self._host}:{self._port}"

    @property
    def cut_now(self) -> bool:
        return self._server is None

    @property
    def stalled(self) -> bool:
        return not self._flowing.is_set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self._host, self._port, reuse_address=True
        )
        self._port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self._cancel_restore()
        await self._stop_listening()
        self._reset_all()

    async def cut(self, seconds: float | None = None) -> None:
        """Reset every connection and refuse new ones (for ``seconds``, if given)."""
        await self._stop_listening()
        self._reset_all()
        self._restore_later(seconds)

    def stall(self, seconds: float | None = None) -> None:
        """Forward nothing, in either direction, on any connection (for ``seconds``)."""
        self._flowing.clear()
        self._restore_later(seconds)

    async def restore(self) -> None:
        """Pass traffic again: listen if cut, forward what a stall held."""
        self._cancel_restore()
        if self._server is None:
            await self.start()
        self._flowing.set()

    def reset_connections(self) -> None:
        """Reset every open connection once; new ones are accepted as before."""
        self._reset_all()

    def _restore_later(self, seconds: float | None) -> None:
        self._cancel_restore()
        if seconds is not None:
            loop = asyncio.get_running_loop()
            self._restore_at = loop.call_later(seconds, lambda: loop.create_task(self.restore()))

    def _cancel_restore(self) -> None:
        if self._restore_at is not None:
            self._restore_at.cancel()
            self._restore_at = None

    async def _stop_listening(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)

    def _reset_all(self) -> None:
        for link in list(self._links):
            link.reset()
        self._links.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            _reset(writer)
            return
        link = _Link(writer, up_writer)
        self._links.add(link)
        self.connections += 1
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self._links.discard(link)
            link.close()

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(_CHUNK):
                await self._flowing.wait()
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if sink.can_write_eof():
                    sink.write_eof()


class _Link:
    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self._ends = (client, upstream)

    def reset(self) -> None:
        for end in self._ends:
            _reset(end)

    def close(self) -> None:
        for end in self._ends:
            end.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), not an orderly FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@contextlib.asynccontextmanager
async def proxy_for(url: str, default_port: int) -> AsyncIterator[TcpFaultProxy]:
    """A started proxy in front of the host and port of ``url`` (``default_port`` if it
    names none: 5432 for PostgreSQL, 8545 for a node); closed on exit."""
    parts = urlsplit(url)
    proxy = TcpFaultProxy((parts.hostname or "127.0.0.1", parts.port or default_port))
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


def through_proxy(url: str, proxy: TcpFaultProxy) -> str:
    """``url`` with its host and port replaced by the proxy's (its user kept)."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{proxy.address}" if credentials else proxy.address
    return parts._replace(netloc=netloc).geturl()
