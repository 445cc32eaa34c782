"""Webhook requests over HTTP (aiohttp), safe against SSRF.

- Every name is resolved by :class:`GuardedResolver`, which refuses the connection when
  any address the name resolves to is internal (:func:`targets.refusal`); aiohttp
  connects only to the addresses the resolver returned, so the address checked is the
  address connected to, even if the name changes between registration and send.
  A literal-IP URL does not go through the resolver: :func:`targets.check_url` checks
  it before each send.
- Redirects are not followed (a ``3xx`` is a failed attempt), proxies from the
  environment are not used, the connect and total times are capped, and at most
  4 KiB of the answer is read.
"""

from __future__ import annotations

import socket
import time

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from intentd.webhooks.ports import Attempt
from intentd.webhooks.targets import TargetRefused, check_url, refusal

__all__ = ["ForbiddenAddress", "GuardedResolver", "HttpSender"]

READ_LIMIT = 4096


class ForbiddenAddress(OSError):
    """A name resolved to an address webhooks are not sent to."""


class GuardedResolver(AbstractResolver):
    """Resolves with ``inner`` and refuses names that resolve to internal addresses."""

    def __init__(self, inner: AbstractResolver, *, allow_private: bool) -> None:
        self._inner = inner
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if not self._allow_private:
            for result in results:
                why = refusal(result["host"])
                if why is not None:
                    raise ForbiddenAddress(f"{host} resolves to {result['host']}, a {why} address")
        return results

    async def close(self) -> None:
        await self._inner.close()


class HttpSender:
    """POSTs webhooks; one connection pool (keep-alive) for every endpoint."""

    def __init__(
        self,
        *,
        allow_private: bool,
        connect_timeout: float,
        total_timeout: float,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self._allow_private = allow_private
        self._timeout = aiohttp.ClientTimeout(
            total=total_timeout, sock_connect=connect_timeout, connect=connect_timeout
        )
        self._resolver = GuardedResolver(
            resolver if resolver is not None else DefaultResolver(), allow_private=allow_private
        )
        self._session: aiohttp.ClientSession | None = None

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                resolver=self._resolver, limit=0, ttl_dns_cache=10, enable_cleanup_closed=True
            )
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, trust_env=False, auto_decompress=False
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(self, url: str, headers: dict[str, str], body: bytes) -> Attempt:
        started = time.monotonic()
        try:
            check_url(url, "test", allow_private=self._allow_private)
            client = await self._client()
            async with client.post(
                url, data=body, headers=headers, allow_redirects=False
            ) as response:
                head = await _read_head(response)
                return Attempt(
                    status=response.status,
                    latency=time.monotonic() - started,
                    response_head=head.decode("utf-8", "replace"),
                    retry_after=response.headers.get("Retry-After"),
                )
        except TargetRefused as exc:
            return Attempt(None, time.monotonic() - started, error=f"refused: {exc}")
        except TimeoutError:
            return Attempt(None, time.monotonic() - started, error="timeout")
        except aiohttp.ClientConnectorError as exc:
            cause = exc.os_error
            error = f"refused: {cause}" if isinstance(cause, ForbiddenAddress) else str(exc)
            return Attempt(None, time.monotonic() - started, error=error)
        except (aiohttp.ClientError, ForbiddenAddress, OSError) as exc:
            error = f"refused: {exc}" if isinstance(exc, ForbiddenAddress) else str(exc)
            return Attempt(None, time.monotonic() - started, error=f"{type(exc).__name__}: {error}")


async def _read_head(response: aiohttp.ClientResponse) -> bytes:
    """At most :data:`READ_LIMIT` bytes of the answer (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while size < READ_LIMIT:
        chunk = await response.content.read(READ_LIMIT - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
