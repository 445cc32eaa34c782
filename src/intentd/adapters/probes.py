"""Cheap questions that tell whether a dependency answers (``supervision.Health`` probes).

Each probe raises unless its dependency answered; the caller bounds its time (a
stalled server counts as down). Each uses a connection of its own, not one the roles
share: a pool busy with work is not an outage, and a probe never waits behind one.

- :class:`PostgresProbe`: ``SELECT 1`` on one connection, opened again after any
  failure (one connection more than the pool, per process);
- :class:`KafkaProbe`: a metadata request to the brokers (the addresses the cluster
  advertises, as the roles' clients reach them);
- :class:`RpcProbe`: ``eth_blockNumber`` from the chain's URLs (one each time, in turn;
  the chain id checked as every client does).
"""

from __future__ import annotations

from typing import Any

import asyncpg
from aiokafka.client import AIOKafkaClient

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.settings import ChainConfig, KafkaConfig

__all__ = ["KafkaProbe", "PostgresProbe", "RpcProbe"]


class PostgresProbe:
    def __init__(self, url: str, *, timeout: float = 3.0) -> None:
        self._url = url
        self._timeout = timeout
        self._conn: Any = None

    async def __call__(self) -> None:
        try:
            if self._conn is None or self._conn.is_closed():
                self._conn = await asyncpg.connect(
                    self._url,
                    timeout=self._timeout,
                    command_timeout=self._timeout,
                    server_settings={"application_name": "intentd-probe"},
                )
            await self._conn.fetchval("SELECT 1")
        except BaseException:
            self._drop()
            raise

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            try:
                await conn.close(timeout=self._timeout)
            except Exception:  # gone already: nothing to close politely
                conn.terminate()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()


class KafkaProbe:
    def __init__(self, config: KafkaConfig) -> None:
        self._config = config
        self._client: Any = None

    async def __call__(self) -> None:
        if self._client is None:
            client = AIOKafkaClient(
                bootstrap_servers=self._config.bootstrap_servers,
                client_id=f"{self._config.client_id}-probe",
                request_timeout_ms=10_000,
            )
            try:
                await client.bootstrap()
            except BaseException:
                await client.close()
                raise
            self._client = client
        await self._client.fetch_all_metadata()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


class RpcProbe:
    def __init__(self, chain: ChainConfig, *, timeout: float = 3.0) -> None:
        self._client = JsonRpcClient(
            chain.name, chain.rpc_urls, timeout=timeout, attempts=1, chain_id=chain.chain_id
        )

    async def __call__(self) -> None:
        await self._client.call("eth_blockNumber", [])

    async def close(self) -> None:
        await self._client.close()
