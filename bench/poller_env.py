"""What the poller benchmarks run against: a scratch database full of intents, a topic.

The database is created next to the one ``make infra-up`` runs (``INTENTD_DATABASE_URL``
in ``.local/infra.env``), migrated, filled with ``count`` intents whose addresses are
:func:`watched_address` of 1..count, and dropped at the end.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from intentd.adapters.evm import json_rpc
from intentd.adapters.postgres import create_pool, migrate
from intentd.settings import Settings
from intentd_dev.devinfra.kafka_mock import create_topics

ROOT = Path(__file__).resolve().parent.parent
INFRA_ENV = ROOT / ".local" / "infra.env"
RELAYER = "0x" + "5e" * 20
MNEMONIC = "test test test test test test test test test test test junk"  # a bench only


def infra_env() -> dict[str, str]:
    if not INFRA_ENV.is_file():
        raise SystemExit(f"{INFRA_ENV} is missing: run `make infra-up` first")
    env = {}
    for line in INFRA_ENV.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            env[key.strip()] = value.strip()
    return env


def watched_address(n: int) -> str:
    """The address of the n-th bench intent (the same formula as the SQL below)."""
    return "0x" + hashlib.sha256(str(n).encode()).hexdigest()[:40]


_KNOWN = {
    "intent_address": "'0x' || substr(encode(sha256(n::text::bytea), 'hex'), 1, 40)",
    "address_index": "n",
    "status": "'PENDING'",
    "expires_at": "now() + interval '1 day'",
    "asset_token_decimals": "6",
    "token_out_decimals": "6",
    "total_due": "1",
}
_BY_TYPE = {
    "text": "'0x9999999999999999999999999999999999999999'",
    "uuid": "'00000000-0000-0000-0000-000000000000'",
    "integer": "0",
    "bigint": "0",
    "numeric": "1",
    "boolean": "false",
    "jsonb": "'{}'",
    "timestamp with time zone": "now()",
}


async def _fill_statement(conn: asyncpg.pool.PoolConnectionProxy[asyncpg.Record]) -> str:
    """An INSERT of intents n = $1..$2 that fills every required column of the table."""
    rows = await conn.fetch(
        """
        SELECT column_name, data_type FROM information_schema.columns
        WHERE table_name = 'intents' AND is_nullable = 'NO' AND column_default IS NULL
        """
    )
    columns = [r["column_name"] for r in rows]
    values = [_KNOWN.get(r["column_name"]) or _BY_TYPE[r["data_type"]] for r in rows]
    return (
        f"INSERT INTO intents ({', '.join(columns)}) SELECT {', '.join(values)} "
        "FROM generate_series($1::bigint, $2::bigint) AS n"
    )


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@asynccontextmanager
async def bench_database(env: dict[str, str], intents: int) -> AsyncIterator[str]:
    """A migrated scratch database holding ``intents`` intents; yields its URL."""
    admin_url = _with_database(env["INTENTD_DATABASE_URL"], "postgres")
    name = f"intentd_bench_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = _with_database(env["INTENTD_DATABASE_URL"], name)
    try:
        pool = await create_pool(url, max_size=2)
        try:
            await migrate(pool)
            async with pool.acquire() as conn:
                fill = await _fill_statement(conn)
                step = 100_000
                for first in range(1, intents + 1, step):
                    await conn.execute(fill, first, min(first + step - 1, intents))
            await pool.execute("ANALYZE intents")
        finally:
            await pool.close()
        yield url
    finally:
        admin = await asyncpg.connect(admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def bench_topic(env: dict[str, str], prefix: str, chain: str) -> str:
    topic = f"{prefix}.deposits.{chain}"
    create_topics(env["INTENTD_KAFKA_MOCK_CONTROL"], [topic], partitions=4)
    return topic


def bench_settings(
    env: dict[str, str],
    url: str,
    chain: dict[str, Any],
    names: tuple[str, str],
    chain_id: int,
    **sections: Any,
) -> Settings:
    """Test settings on the database ``url`` with two chains of the section ``chain``:
    ``names[0]`` with ``chain_id`` (the one read) and ``names[1]`` with the next id
    (a destination, only its settings read); ``sections`` added at the top."""
    source, destination = names
    return Settings.model_validate(
        {
            "environment": "test",
            "database": {"url": url},
            "kafka": {"bootstrap_servers": env["INTENTD_KAFKA_BOOTSTRAP"]},
            "chains": {
                source: {**chain, "chain_id": chain_id},
                destination: {**chain, "chain_id": chain_id + 1},
            },
            "hd_mnemonic": MNEMONIC,
            **sections,
        }
    )


def on_every_post(seen: Callable[[list[dict[str, Any]]], Awaitable[None]]) -> None:
    """Patch the JSON-RPC HTTP transport of every client in this process: each POST's
    calls are given to ``seen`` (awaited) before the POST is sent. At the transport,
    so the same benchmark counts older code too."""
    transport = json_rpc.HttpTransport
    post = transport.post

    async def counted(self_: Any, url: str, body: bytes, seconds: float) -> Any:
        await seen(orjson.loads(body))
        return await post(self_, url, body, seconds)

    transport.post = counted  # type: ignore[method-assign]
