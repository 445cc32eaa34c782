"""A poller rides out an RPC outage longer than its client's own retries.

The chain's only RPC URL goes through a fault proxy that cuts it for 40 s (the
JSON-RPC client gives up after about 25 s of retries): the poller role does not end;
the process's health says the chain's RPC is down meanwhile; a payment made during
the outage is published once after it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from tests.integration.test_poller import Chain, TopicReader, intent_address, section, to

from intentd.adapters.postgres import Pool
from intentd.adapters.probes import RpcProbe
from intentd.composition.roles import poller_role
from intentd.messages import deposits_topic
from intentd.runtime import Readiness
from intentd.settings import Settings
from intentd.supervision import Health, rpc
from intentd_dev.devchain import DevChain
from intentd_dev.devinfra.anvil import start_anvil
from intentd_dev.devinfra.kafka_mock import create_topics
from intentd_dev.fault_proxy import TcpFaultProxy

pytestmark = pytest.mark.integration

_names = itertools.count(1)


@pytest.fixture
async def chain(
    infra: dict[str, str], make_settings: Callable[..., Settings], topic_prefix: str
) -> AsyncIterator[Chain]:
    """test_poller's chain under names of this module's own (a chain's cursor is kept in
    the session's database by name)."""
    number = next(_names)
    name, chain_id = f"RPCOUTAGE_{number}", 970_000 + number
    anvil = await asyncio.to_thread(start_anvil, chain_id)
    try:
        async with DevChain(anvil.url) as node:
            deployer, payer = (await node.accounts())[:2]
            usdc = await node.deploy_token(deployer, "Test USD Coin", "USDC", 6)
            usdt = await node.deploy_token(deployer, "Test Tether USD", "USDT", 6)
            topic = deposits_topic(topic_prefix, name)
            await asyncio.to_thread(create_topics, infra["INTENTD_KAFKA_MOCK_CONTROL"], [topic], 4)

            def configure(**extra: Any) -> Settings:
                return make_settings(
                    chains={name: section(chain_id, [anvil.url], usdc, usdt) | extra}
                )

            yield Chain(
                name, anvil, node, deployer, payer, usdc, usdt, "", configure(), topic, configure
            )
    finally:
        await asyncio.to_thread(anvil.stop)


OUTAGE = 40.0


async def until(condition: Callable[[], bool], within: float) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.1)


@pytest.mark.timeout(180)
async def test_a_poller_rides_out_its_rpc_away_for_longer_than_its_retries(
    chain: Chain,
    pool: Pool,
    settings: Settings,
    infra: dict[str, str],
) -> None:
    node = urlsplit(chain.anvil.url)
    proxy = TcpFaultProxy((node.hostname or "127.0.0.1", node.port or 8545))
    await proxy.start()
    configured = chain.configure(rpc_urls=[f"http://{proxy.address}"])
    readiness = Readiness()
    health = Health(readiness=readiness)
    probe = RpcProbe(configured.chain(chain.name))
    health.watch(rpc(chain.name), probe)
    stop = asyncio.Event()
    probing = asyncio.create_task(health.run(stop))
    polling = asyncio.create_task(
        poller_role(configured, chain.name, pool=pool, health=health)(stop)
    )
    try:
        before = await intent_address(pool, settings)
        first = await chain.rpc.send(chain.payer, before, value=11)
        async with TopicReader(infra["INTENTD_KAFKA_BOOTSTRAP"], chain.topic) as reader:
            await reader.wait_for(lambda ms: bool(to(before)(ms)))
            during = await intent_address(pool, settings)
            await proxy.cut()
            second = await chain.rpc.send(chain.payer, during, value=22)
            await until(lambda: health.is_down(rpc(chain.name)), within=15)
            assert readiness.missing() == [f"rpc:{chain.name} unavailable"]
            await asyncio.sleep(OUTAGE)
            assert not polling.done(), polling  # rode it out, did not end
            await proxy.restore()
            await reader.wait_for(lambda ms: bool(to(during)(ms)), limit=60)
            await reader.drain(0.5)
            found: dict[str, list[Any]] = {a: to(a)(reader.messages) for a in (before, during)}
        assert not health.is_down(rpc(chain.name)) and readiness.missing() == []
    finally:
        stop.set()
        await asyncio.wait_for(polling, 20)
        await asyncio.wait_for(probing, 10)
        await probe.close()
        await proxy.close()
    assert [m["tx_hash"] for m in found[before]] == [first]
    assert [m["tx_hash"] for m in found[during]] == [second]  # once
