"""A poller rides out an RPC outage longer than its client's own retries.

The chain's only RPC URL goes through a fault proxy that cuts it for 40 s (the
JSON-RPC client gives up after about 25 s of retries): the poller role does not end;
the process's health says the chain's RPC is down meanwhile; a payment made during
the outage is published once after it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.integration.poller_chain import Chain, chain_fixture
from tests.integration.test_poller import TopicReader, intent_address, to
from tests.polling import until

from intentd.adapters.postgres import Pool
from intentd.adapters.probes import RpcProbe
from intentd.composition.roles import poller_role
from intentd.runtime import Readiness
from intentd.settings import Settings
from intentd.supervision import Health, rpc
from intentd_dev.fault_proxy import TcpFaultProxy, proxy_for, through_proxy

pytestmark = pytest.mark.integration

_names = itertools.count(1)


# test_poller's chain under names of this module's own (a chain's cursor is kept in the
# session's database by name)
chain = chain_fixture("RPCOUTAGE", 970_000)

OUTAGE = 40.0


@pytest.fixture
async def proxy(chain: Chain) -> AsyncIterator[TcpFaultProxy]:
    """The chain's only RPC URL goes through it."""
    async with proxy_for(chain.anvil.url, 8545) as instance:
        yield instance


@pytest.mark.timeout(180)
async def test_a_poller_rides_out_its_rpc_away_for_longer_than_its_retries(
    chain: Chain,
    pool: Pool,
    settings: Settings,
    infra: dict[str, str],
    proxy: TcpFaultProxy,
) -> None:
    configured = chain.configure(rpc_urls=[through_proxy(chain.anvil.url, proxy)])
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
    assert [m["tx_hash"] for m in found[before]] == [first]
    assert [m["tx_hash"] for m in found[during]] == [second]  # once
