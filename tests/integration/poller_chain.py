"""A chain of one test's own for the poller tests: an automining anvil under a chain
name no other test uses (cursors live in the session's database, by name), the two
test tokens deployed (a third, unconfigured one on request), its deposits topic, and
the settings that point a poller at it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web

from intentd.messages import deposits_topic
from intentd.settings import Settings
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra.anvil import AnvilProcess, free_port, start_anvil
from intentd_dev.devinfra.kafka_mock import create_topics

RELAYER = "0x" + "5e" * 20


@dataclass
class Chain:
    """One test's chain: anvil, its tokens, the settings that point a poller at it."""

    name: str
    anvil: AnvilProcess
    rpc: DevChain
    deployer: str
    payer: str
    usdc: str
    usdt: str
    fake: str
    settings: Settings
    topic: str
    configure: Callable[..., Settings]
    """Settings with some keys of the chain's section replaced."""


def section(chain_id: int, urls: list[str], usdc: str, usdt: str, **extra: Any) -> dict[str, Any]:
    token = {"name": "Test token", "decimals": 6, "category": "stablecoin"}
    return {
        "chain_id": chain_id, "network": "test", "rpc_urls": urls, "confirmations": 1,
        "poll_interval": 0.1, "batch_size": 50, "start_block": 0, "rpc_timeout": 2.0,
        "relayer": RELAYER,  # every chain a route can reach needs one; none is paid here
        "tokens": [{**token, "address": usdc, "symbol": "USDC"},
                   {**token, "address": usdt, "symbol": "USDT"}],
        **extra,
    }  # fmt: skip


@asynccontextmanager
async def own_chain(
    infra: dict[str, str],
    make_settings: Callable[..., Settings],
    topic_prefix: str,
    name: str,
    chain_id: int,
    *,
    fake: bool = False,
    other_chains: Callable[[dict[str, str]], Mapping[str, Any]] | None = None,
    **sections: Any,
) -> AsyncIterator[Chain]:
    """The chain ``name`` (``chain_id``) on an anvil of its own, stopped on exit. With
    ``fake``, a third token (symbol USDC) deployed and left out of the settings;
    ``other_chains`` (of the infrastructure: sections by name) and ``sections`` are
    added to the settings."""
    anvil = await asyncio.to_thread(start_anvil, chain_id)
    try:
        async with DevChain(anvil.url) as rpc:
            deployer, payer = (await rpc.accounts())[:2]
            usdc = await rpc.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            usdt = await rpc.deploy_token(deployer, "Test Tether USD", "USDT", 6)
            unlisted = await rpc.deploy_token(deployer, "Fake USD Coin", "USDC", 6) if fake else ""
            topic = deposits_topic(topic_prefix, name)
            await asyncio.to_thread(create_topics, infra["INTENTD_KAFKA_MOCK_CONTROL"], [topic], 4)

            def configure(**extra: Any) -> Settings:
                fields = section(chain_id, [anvil.url], usdc, usdt) | extra
                others = other_chains(infra) if other_chains else {}
                return make_settings(chains={name: fields, **others}, **sections)

            yield Chain(
                name,
                anvil,
                rpc,
                deployer,
                payer,
                usdc,
                usdt,
                unlisted,
                configure(),
                topic,
                configure,
            )
    finally:
        await asyncio.to_thread(anvil.stop)


def chain_fixture(label: str, first_id: int, **options: Any) -> Any:
    """A test's ``chain`` fixture: :func:`own_chain` (``options`` passed on) named
    ``LABEL_N`` with chain id ``first_id + N``, N counting the module's chains."""
    numbers = itertools.count(1)

    @pytest.fixture
    async def chain(
        infra: dict[str, str], make_settings: Callable[..., Settings], topic_prefix: str
    ) -> AsyncIterator[Chain]:
        number = next(numbers)
        name, chain_id = f"{label}_{number}", first_id + number
        async with own_chain(infra, make_settings, topic_prefix, name, chain_id, **options) as made:
            yield made

    return chain


@asynccontextmanager
async def served_rpc(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """A JSON-RPC endpoint on a free loopback port whose POSTs ``handle`` answers (a
    provider in front of anvil that the test controls); its URL."""
    app = web.Application()
    app.router.add_post("/", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
