"""Shared fixtures: the real local infrastructure started by ``make infra-up``.

Integration tests never skip: without ``.local/infra.env`` they fail and say to run
``make infra-up``. Each test session gets its own database (migrated from scratch)
and its own Kafka topic prefix, so runs never see each other's data.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from eth_account.hdaccount import Language, generate_mnemonic

from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.settings import Settings
from intentd_dev.devinfra.kafka_mock import create_topics

ROOT = Path(__file__).resolve().parent.parent
INFRA_ENV = ROOT / ".local" / "infra.env"
CHAINS = {"BASE_TESTNET": 84532, "ARBITRUM_TESTNET": 421614}


def read_infra_env() -> dict[str, str]:
    if not INFRA_ENV.is_file():
        pytest.fail(f"{INFRA_ENV} is missing: run `make infra-up` first", pytrace=False)
    env = {}
    for line in INFRA_ENV.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            env[key.strip()] = value.strip()
    return env


@pytest.fixture(scope="session")
def infra() -> dict[str, str]:
    """The endpoints ``make infra-up`` wrote (database, Kafka, RPC URLs, tokens, keys)."""
    return read_infra_env()


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


async def _fresh_database(infra: dict[str, str]) -> tuple[str, str]:
    """Create and migrate a new database; return (name, url)."""
    admin_url = _with_database(infra["INTENTD_DATABASE_URL"], "postgres")
    name = f"intentd_test_{os.getpid()}_{secrets.token_hex(3)}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = _with_database(infra["INTENTD_DATABASE_URL"], name)
    pool = await create_pool(url)
    try:
        await migrate(pool)
    finally:
        await pool.close()
    return name, url


async def _drop_database(infra: dict[str, str], name: str) -> None:
    admin = await asyncpg.connect(_with_database(infra["INTENTD_DATABASE_URL"], "postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture(scope="session")
async def database_url(infra: dict[str, str]) -> AsyncIterator[str]:
    """A fresh, migrated database for this test session, dropped at the end."""
    name, url = await _fresh_database(infra)
    yield url
    await _drop_database(infra, name)


@pytest.fixture
async def own_stack(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[tuple[Settings, Pool]]:
    """Settings and a pool with a database and topics of this test alone.

    For tests that run executors: the shared session database holds actions of other
    tests (prefills of fake deposits) that an executor would really carry out.
    """
    async with own_resources(infra, make_settings) as settings:
        pool = await create_pool(settings.database.url.get_secret_value(), max_size=5)
        try:
            yield settings, pool
        finally:
            await pool.close()


@asynccontextmanager
async def own_resources(
    infra: dict[str, str], make_settings: Callable[..., Settings]
) -> AsyncIterator[Settings]:
    """Settings with a new migrated database, topics and HD mnemonic of their own; the
    database dropped on exit."""
    name, url = await _fresh_database(infra)
    try:
        prefix = new_topic_prefix(infra)
        yield make_settings(
            hd_mnemonic=generate_mnemonic(12, Language.ENGLISH),
            database={"url": url},
            kafka={
                "bootstrap_servers": infra["INTENTD_KAFKA_BOOTSTRAP"],
                "topic_prefix": prefix,
                "lifecycle_group": f"{prefix}-lifecycle",
            },
        )
    finally:
        await _drop_database(infra, name)


@pytest.fixture(scope="session")
async def pool(database_url: str) -> AsyncIterator[Pool]:
    pool = await create_pool(database_url, max_size=10)
    yield pool
    await pool.close()


def new_topic_prefix(infra: dict[str, str]) -> str:
    """A new topic prefix with every topic the roles use pre-created (4 partitions)."""
    prefix = f"t{secrets.token_hex(4)}"
    topics = [f"{prefix}.deposits.{chain}" for chain in CHAINS]
    topics += [f"{prefix}.{name}" for name in ("intent-events", "dlq", "actions", "action-results")]
    create_topics(infra["INTENTD_KAFKA_MOCK_CONTROL"], topics, partitions=4)
    return prefix


@pytest.fixture(scope="session")
def topic_prefix(infra: dict[str, str]) -> str:
    """The topic prefix of this test session."""
    return new_topic_prefix(infra)


@pytest.fixture
def isolated_settings(infra: dict[str, str], make_settings: Callable[..., Settings]) -> Settings:
    """Settings with topics of this test alone (for tests that replay whole topics)."""
    return make_settings(
        kafka={
            "bootstrap_servers": infra["INTENTD_KAFKA_BOOTSTRAP"],
            "topic_prefix": new_topic_prefix(infra),
        }
    )


def chain_section(
    infra: dict[str, str], name: str, chain_id: int, **overrides: Any
) -> dict[str, Any]:
    section: dict[str, Any] = {
        "chain_id": chain_id,
        "network": "test",
        "l1_fee": "none",  # anvil charges no OP-stack L1 data fee, even on 84532
        "rpc_urls": [infra[f"INTENTD_{name}_RPC_URL"]],
        "confirmations": 1,
        "poll_interval": 0.1,
        "relayer": infra["INTENTD_RELAYER_ADDRESS"],
        "fee_account": infra["INTENTD_FEE_ACCOUNT_ADDRESS"],
        "tokens": [
            {
                "address": infra[f"INTENTD_{name}_USDC"],
                "symbol": "USDC",
                "name": "Test USD Coin",
                "decimals": 6,
                "category": "stablecoin",
            },
            {
                "address": infra[f"INTENTD_{name}_USDT"],
                "symbol": "USDT",
                "name": "Test Tether USD",
                "decimals": 6,
                "category": "stablecoin",
            },
        ],
    }
    section.update(overrides)
    return section


@pytest.fixture(scope="session")
def make_settings(
    infra: dict[str, str], database_url: str, topic_prefix: str
) -> Callable[..., Settings]:
    """Build Settings for this session; keyword arguments replace top-level sections."""

    session_mnemonic = generate_mnemonic(12, Language.ENGLISH)

    def build(**sections: Any) -> Settings:
        # Each database gets its own mnemonic: address indexes restart at 1 in every
        # database, so a shared mnemonic would hand out the same addresses again.
        mnemonic = sections.pop("hd_mnemonic", session_mnemonic)
        data: dict[str, Any] = {
            "environment": "test",
            "database": {"url": database_url},
            "kafka": {
                "bootstrap_servers": infra["INTENTD_KAFKA_BOOTSTRAP"],
                "topic_prefix": topic_prefix,
                "lifecycle_group": f"{topic_prefix}-lifecycle",
            },
            "chains": {name: chain_section(infra, name, cid) for name, cid in CHAINS.items()},
            "hd_mnemonic": mnemonic,
            # Creates and quotes are not checked against the relayer's float (no executor
            # stores it in most tests); the tests of docs/api.md insufficient_liquidity
            # pass their own section.
            "liquidity": {"admission": False},
        }
        data.update(sections)
        return Settings.model_validate(data)

    return build


@pytest.fixture(scope="session")
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()
