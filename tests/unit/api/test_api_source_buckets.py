"""Unauthenticated requests spend a bucket per source: an IPv4 address, or an IPv6 /64.

A host on IPv6 is handed a whole /64 (often more) and may send from any of its 2**64
addresses: a bucket per address would give it as many buckets as it likes.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.api.callers.auth import Authenticator
from intentd.api.callers.sources import source_bucket
from intentd.api.connections import Database
from intentd.api.problems import ApiProblem
from intentd.settings import Settings


@pytest.mark.parametrize(
    ("source", "bucket"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2:ffff::", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),  # IPv4-mapped: the IPv4 address
        ("fe80::1%eth0", "fe80::/64"),
        ("::1", "::/64"),
        ("not-an-address", "not-an-address"),  # as the peer or proxy gave it
    ],
)
def test_the_bucket_of_a_source(source: str, bucket: str) -> None:
    assert source_bucket(source) == bucket


@given(st.integers(0, 2**128 - 1), st.integers(0, 2**64 - 1))
def test_every_address_of_a_64_shares_its_bucket(address: int, host: int) -> None:
    one = ipaddress.IPv6Address(address)
    other = ipaddress.IPv6Address((address >> 64 << 64) | host)
    if one.ipv4_mapped is None and other.ipv4_mapped is None:
        assert source_bucket(str(one)) == source_bucket(str(other))


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_two_64s_have_two_buckets(first: int, second: int) -> None:
    one, other = (ipaddress.IPv6Address((n << 64) | 1) for n in (first, second))
    if first != second and one.ipv4_mapped is None and other.ipv4_mapped is None:
        assert source_bucket(str(one)) != source_bucket(str(other))


SETTINGS = Settings.model_validate(
    {
        "database": {"url": "postgresql://x/y"},
        "kafka": {"bootstrap_servers": "k:1"},
        "chains": {"A_TESTNET": {"chain_id": 1001, "network": "test", "rpc_urls": ["http://x"]}},
        "api": {"source_rate_limit": 5},
    }
)


class UnusedPool:
    async def acquire(self, timeout: float | None = None) -> object:
        raise AssertionError("a request without credentials never reaches the database")


async def answers(auth: Authenticator, sources: list[str]) -> list[str]:
    """The problem code of a request without credentials from each source in turn."""
    found = []
    for source in sources:
        with pytest.raises(ApiProblem) as refused:
            await auth.api_key(None, source)
        found.append(refused.value.code)
    return found


async def test_a_flood_from_one_64_is_limited_as_one_source() -> None:
    database = Database.of(SETTINGS, UnusedPool())  # type: ignore[arg-type]
    auth = Authenticator(SETTINGS, database, clock=lambda: 0.0)
    one_64 = [f"2001:db8:7:7::{host:x}" for host in range(1, 21)]
    assert await answers(auth, one_64) == ["missing_credentials"] * 5 + ["source_rate_limited"] * 15
    assert await answers(auth, ["2001:db8:7:8::1"]) == ["missing_credentials"]  # another /64
    mapped = ["203.0.113.9"] * 3 + ["::ffff:203.0.113.9"] * 3  # one IPv4 host, two spellings
    assert await answers(auth, mapped) == ["missing_credentials"] * 5 + ["source_rate_limited"]
