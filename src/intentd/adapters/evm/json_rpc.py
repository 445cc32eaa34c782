"""EVM JSON-RPC over HTTP: batch calls, timeouts, retries with backoff, failover.

:class:`JsonRpcClient` sends JSON-RPC batches (one HTTP POST carrying an array of
calls, at most ``max_calls`` per POST, at most ``parallel_posts`` POSTs in flight).
Every POST has a timeout; a failed POST is retried with exponential backoff and
jitter (tenacity), each retry on the next URL of the chain's list (failover). An
error in any element of a batch fails the whole batch, which is retried: a block is
never silently dropped. After the last attempt the error is raised. Given the
chain's ``chain_id``, the client asks a URL for ``eth_chainId`` before its first use
and again after every failover, and never uses one that answers another chain
(:class:`WrongChainError` and ``intentd_rpc_wrong_chain_total`` at each attempt; it
fails over as for any other failure). Such a URL is logged once per process (an error
line, whichever client of the process met it) until it answers our chain again (an
info line). URLs appear in logs only redacted.

A call's time is bounded by the attempts, not by a deadline: each POST waits at most
``timeout`` seconds, but a call may first wait for one of the ``parallel_posts``
slots the client's other callers hold. A caller that needs a deadline (an HTTP
request) wraps its calls in one, see ``scanning.trigger``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any, Protocol

import aiohttp
import orjson
import structlog
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from intentd import observability as metrics
from intentd.backoff import Backoff
from intentd.chain.errors import ChainUnavailable, NoAnswer
from intentd.settings.redaction import redact_url, redact_urls_in
from intentd.supervision.episodes import Episodes, Wording
from intentd.supervision.outage_log import emit

__all__ = [
    "Call",
    "HttpTransport",
    "JsonRpcClient",
    "MissingResult",
    "RangeLimitError",
    "RpcError",
    "RpcTransportError",
    "Transport",
    "WrongChainError",
    "is_range_limit",
]

log = structlog.get_logger()

_RANGE_LIMIT = re.compile(
    "|".join(
        (
            r"query returned more than",
            r"block range",
            r"range (is )?too (large|wide|big)",
            r"too many (blocks|results|logs)",
            r"exceed(s|ed)? (the )?(max|maximum|limit)",
            r"response size",
            r"limit exceeded",
            r"query timeout exceeded",
        )
    ),
    re.IGNORECASE,
)
_LIMIT_CODES = frozenset({-32005})
_RATE_LIMIT = re.compile(
    r"rate|request count|too many requests|capacity|credits|throughput", re.IGNORECASE
)
"""-32005 is also the code of rate limits ("request rate exceeded"): those are retried
with backoff like any failure, not answered by asking for a narrower range."""
_WRONG_CHAIN: Episodes[tuple[str, str]] = Episodes(
    Wording(
        begun="rpc url answers another chain; not used",
        ended="rpc url answers our chain again",
        level="error",
    ),
    summary_every=None,
)
"""The (chain, URL) pairs of this process that answer another chain: each told once."""


def is_range_limit(code: int, message: str) -> bool:
    """Whether a JSON-RPC error is a provider refusing an ``eth_getLogs`` range as too big."""
    if _RATE_LIMIT.search(message) is not None:
        return False
    return code in _LIMIT_CODES or _RANGE_LIMIT.search(message) is not None


class RpcError(ChainUnavailable):
    """The node answered a call with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: error {code}: {message}")
        self.method = method
        self.code = code
        self.message = message


class RangeLimitError(RpcError):
    """The provider refused a query as too wide or too large; ask for less."""


class RpcTransportError(NoAnswer):
    """No usable answer: connection failure, timeout, HTTP error or malformed body."""


class WrongChainError(RpcTransportError):
    """The URL answers ``eth_chainId`` with another chain than the configured one."""


class MissingResult(ChainUnavailable):
    """The node answered null where a value must exist (e.g. a block at or below its head)."""


_RETRYABLE = (RpcError, RpcTransportError, MissingResult)


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, _RETRYABLE) and not isinstance(exc, RangeLimitError)


class Transport(Protocol):
    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        """POST ``body`` as JSON; return (HTTP status, response body). Raise on no answer."""
        ...

    async def close(self) -> None: ...


class HttpTransport:
    """aiohttp with keep-alive connections; created lazily inside the running loop."""

    def __init__(self, *, connections: int = 16) -> None:
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connections),
                headers={"Content-Type": "application/json"},
            )
        try:
            async with self._session.post(
                url, data=body, timeout=aiohttp.ClientTimeout(total=seconds)
            ) as response:
                return response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise RpcTransportError(f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


Call = tuple[str, Sequence[Any]]


class JsonRpcClient:
    """JSON-RPC batches to one chain's URLs, with retries and failover."""

    def __init__(
        self,
        chain: str,
        urls: Sequence[str],
        *,
        transport: Transport | None = None,
        timeout: float = 10.0,
        attempts: int = 8,
        backoff: float = 0.25,
        backoff_max: float = 8.0,
        max_calls: int = 50,
        parallel_posts: int = 4,
        chain_id: int | None = None,
    ) -> None:
        if not urls:
            raise ValueError("at least one RPC URL is needed")
        self.chain = chain
        self._urls = list(urls)
        self._current = 0
        self._transport = transport or HttpTransport()
        self._timeout = timeout
        self._attempts = attempts
        self._wait = Backoff(backoff, cap=backoff_max, jitter=backoff)
        self._max_calls = max_calls
        self._posts = asyncio.Semaphore(parallel_posts)
        self._chain_id = chain_id
        self._verified: str | None = None
        """The URL whose ``eth_chainId`` answered our chain since the last failover."""

    @property
    def url(self) -> str:
        """The URL calls go to now."""
        return self._urls[self._current]

    async def call(self, method: str, params: Sequence[Any], *, allow_null: bool = False) -> Any:
        """One call (sent as a batch of one)."""
        [result] = await self.batch([(method, params)], allow_null=allow_null)
        return result

    async def batch(self, calls: Sequence[Call], *, allow_null: bool = False) -> list[Any]:
        """Results of ``calls`` in order; raise if any call fails after the retries.

        A null result raises :class:`MissingResult` (and is retried) unless ``allow_null``.
        :class:`RangeLimitError` is raised at once, without retry: the caller asks for less.
        """
        if not calls:
            return []
        chunks = [calls[i : i + self._max_calls] for i in range(0, len(calls), self._max_calls)]
        if len(chunks) == 1:
            return await self._send(chunks[0], allow_null)
        parts = await asyncio.gather(*(self._send(chunk, allow_null) for chunk in chunks))
        return [result for part in parts for result in part]

    async def together(self, calls: Sequence[Call], *, allow_null: bool = False) -> list[Any]:
        """Results of ``calls`` asked in one POST to one URL (retried whole, as ``batch``).

        ``batch`` may split calls over several POSTs, which a load-balanced provider can
        route to nodes blocks apart. A load balancer routes one request to one backend,
        so the answers of one POST come from one view of the chain: a caller that
        compares answers (a head and the receipts below it, logs and the block that ends
        their range) asks them together and checks their consistency from the answers
        themselves (the head the batch reports, the hash of the block it ends with).
        At most ``max_calls`` calls (the provider's batch limit), else ``ValueError``.
        """
        if not calls:
            return []
        if len(calls) > self._max_calls:
            raise ValueError(f"{len(calls)} calls do not fit one POST of {self._max_calls}")
        return await self._send(calls, allow_null)

    @property
    def max_calls(self) -> int:
        """The most calls one POST carries."""
        return self._max_calls

    async def close(self) -> None:
        await self._transport.close()

    async def _send(self, calls: Sequence[Call], allow_null: bool) -> list[Any]:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=lambda state: self._wait.delay(state.attempt_number),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                url = self.url
                try:
                    async with self._posts:
                        if self._chain_id is not None and self._verified != url:
                            await self._check_chain(url, self._chain_id)
                        return await self._post(url, calls, allow_null)
                except RangeLimitError:
                    raise
                except _RETRYABLE as exc:
                    self._failed(url, calls, exc, attempt.retry_state.attempt_number)
                    raise
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _post(self, url: str, calls: Sequence[Call], allow_null: bool) -> list[Any]:
        body = orjson.dumps(
            [
                {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
                for i, (method, params) in enumerate(calls)
            ]
        )
        status, raw = await self._transport.post(url, body, self._timeout)
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise RpcTransportError(f"HTTP {status}, body is not JSON: {raw[:200]!r}") from None
        if isinstance(answer, dict):  # the whole batch was refused
            error = answer.get("error")
            if isinstance(error, dict):  # for its log queries, if it has any
                logs = any(method == "eth_getLogs" for method, _ in calls)
                raise _rpc_error("eth_getLogs" if logs else calls[0][0], error)
            raise RpcTransportError(f"HTTP {status}, batch answered with {raw[:200]!r}")
        if status != 200 or not isinstance(answer, list):
            raise RpcTransportError(f"HTTP {status}: {raw[:200]!r}")
        by_id: dict[Any, Any] = {item.get("id"): item for item in answer if isinstance(item, dict)}
        results = []
        for i, (method, params) in enumerate(calls):
            item = by_id.get(i)
            if item is None:
                raise RpcTransportError(f"{method}: no answer for call {i} of the batch")
            error = item.get("error")
            if error is not None:
                raise _rpc_error(method, error)
            if "result" not in item:
                raise RpcTransportError(f"{method}: answer without result or error")
            result = item["result"]
            if result is None and not allow_null:
                raise MissingResult(f"{method}{list(params)!r} answered null")
            results.append(result)
        return results

    async def _check_chain(self, url: str, chain_id: int) -> None:
        [answer] = await self._post(url, [("eth_chainId", [])], False)
        answered = int(answer, 16) if isinstance(answer, str) else None
        shown = redact_url(url)
        if answered != chain_id:
            metrics.RPC_WRONG_CHAIN.labels(self.chain).inc()
            emit(_WRONG_CHAIN.seen((self.chain, url), chain=self.chain, url=shown,
                                   expected=chain_id, answered=answered))  # fmt: skip
            raise WrongChainError(f"{shown} answers chain {answered}, not {chain_id}")
        emit(_WRONG_CHAIN.ended((self.chain, url), answered=answered))
        if self.url == url:
            self._verified = url

    def _failed(self, url: str, calls: Sequence[Call], exc: Exception, attempt: int) -> None:
        method = exc.method if isinstance(exc, RpcError) else calls[0][0]
        metrics.RPC_ERRORS.labels(self.chain, method).inc()
        switched = len(self._urls) > 1 and self.url == url
        if switched:
            self._current = (self._current + 1) % len(self._urls)
            self._verified = None  # the next URL is checked before use, every time
            metrics.RPC_FAILOVERS.labels(self.chain).inc()
        # debug: a caller that gives up reports the outage (``supervision``), told in a
        # few lines however many retries it holds; the metrics count each failure and
        # each failover
        log.debug(
            "rpc call failed",
            chain=self.chain,
            method=method,
            calls=len(calls),
            attempt=attempt,
            url=redact_url(url),
            error=redact_urls_in(str(exc), self._urls),
            failover=switched,
        )


def _rpc_error(method: str, error: Any) -> RpcError:
    code = error.get("code", 0) if isinstance(error, dict) else 0
    message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    code = code if isinstance(code, int) else 0
    if method == "eth_getLogs" and is_range_limit(code, message):
        return RangeLimitError(method, code, message)
    return RpcError(method, code, message)
