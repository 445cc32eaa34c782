"""An ASGI app served over real HTTP in the caller's event loop: what the API tests,
the console tests and the console benchmark need.

Dev tooling only: uvicorn on a free loopback port, as ``intentd api`` serves it
(httptools, lifespan on), without its signal handlers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from intentd.api.server import Server, bind

__all__ = ["served"]


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 and yield its base URL, once the
    server has started (its lifespan ran); on exit, stop it and wait for it to end.
    A server that fails to start raises here."""
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(app, http="httptools", lifespan="on", access_log=False, log_config=None)
    server = Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()
