"""Pure parts of the API's abuse limits: source addresses, bounded maps, requests in
flight (issue 11)."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import pytest

from intentd.api.callers.lru import Lru
from intentd.api.callers.ratelimit import RateLimiter
from intentd.api.callers.sources import source_address
from intentd.api.capacity import InFlightLimit

PROXY = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8")]


@pytest.mark.parametrize(
    ("peer", "forwarded", "proxies", "source"),
    [
        ("203.0.113.9", ["1.2.3.4"], PROXY, "203.0.113.9"),  # not a proxy: header ignored
        ("10.0.0.1", ["1.2.3.4"], [], "10.0.0.1"),  # no proxies configured
        ("10.0.0.1", ["1.2.3.4"], PROXY, "1.2.3.4"),
        ("10.0.0.1", ["6.6.6.6, 1.2.3.4"], PROXY, "1.2.3.4"),  # the client wrote 6.6.6.6
        ("10.0.0.1", ["1.2.3.4, 10.0.0.2"], PROXY, "1.2.3.4"),  # two proxies
        ("10.0.0.1", ["1.2.3.4", "10.0.0.2"], PROXY, "1.2.3.4"),  # two header lines
        ("10.0.0.1", [], PROXY, "10.0.0.1"),
        ("fd00::1", ["2001:db8::5"], PROXY, "2001:db8::5"),
        ("10.0.0.1", ["junk, 10.0.0.3"], PROXY, "junk"),  # the proxy said so: one bucket
        (None, ["1.2.3.4"], PROXY, None),
    ],
)
def test_the_source_is_the_first_hop_no_trusted_proxy_added(
    peer: str | None, forwarded: list[str], proxies: Any, source: str | None
) -> None:
    assert source_address(peer, forwarded, proxies) == source


def test_a_full_lru_forgets_the_least_recently_used() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert ("a" in cache, "b" in cache, "c" in cache) == (True, False, True)
    assert len(cache) == 2


def test_a_limiter_holds_a_bounded_number_of_buckets() -> None:
    limiter = RateLimiter(size=10)
    for n in range(1000):
        assert limiter.check(n, 1, 0.0) == 0.0
    assert len(limiter._buckets) == 10
    assert limiter.check(999, 1, 0.0) > 0  # recent buckets are kept


async def test_requests_past_the_in_flight_limit_are_answered_503_at_once() -> None:
    release = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    limit = InFlightLimit(app, limit=2)
    sent: list[list[dict[str, Any]]] = [[], [], []]

    def call(n: int) -> Any:
        async def send(message: dict[str, Any]) -> None:
            sent[n].append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        scope = {"type": "http", "path": "/api/v1/intents", "headers": [], "method": "GET"}
        return limit(scope, receive, send)

    held = [asyncio.ensure_future(call(n)) for n in (0, 1)]
    await asyncio.sleep(0)
    await asyncio.wait_for(call(2), 1)
    start = sent[2][0]
    assert start["status"] == 503
    assert (b"retry-after", b"1") in start["headers"]
    release.set()
    await asyncio.gather(*held)
    assert [s[0]["status"] for s in sent[:2]] == [200, 200]
