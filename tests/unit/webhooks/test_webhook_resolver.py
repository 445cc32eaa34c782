"""The webhook sender's resolver: every address a name resolves to is checked at
connect time, so a name that rebinds to an internal address after registration is
refused where the connection is made."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from intentd.adapters.http.webhook_sender import ForbiddenAddress, GuardedResolver


class Answers(AbstractResolver):
    """A resolver that answers ``addresses`` for every name."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in self.addresses
        ]

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    "internal",
    [
        "127.0.0.1",
        "fec0::1",
        "fd00:ec2::254",
        "::ffff:0:a00:1",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::1",
        "192.0.0.8",
        "fe80::1%2",
    ],
)
async def test_a_name_resolving_to_an_internal_address_is_refused(internal: str) -> None:
    resolver = GuardedResolver(Answers("93.184.215.14", internal), allow_private=False)
    with pytest.raises(ForbiddenAddress, match="resolves to"):
        await resolver.resolve("shop.example", 443)


async def test_public_answers_pass_and_allow_private_lifts_the_check() -> None:
    public = GuardedResolver(Answers("93.184.215.14", "2606:4700::6810:85e5"), allow_private=False)
    assert [r["host"] for r in await public.resolve("shop.example", 443)] == [
        "93.184.215.14",
        "2606:4700::6810:85e5",
    ]
    lifted = GuardedResolver(Answers("fec0::1"), allow_private=True)
    assert [r["host"] for r in await lifted.resolve("shop.example", 443)] == ["fec0::1"]
