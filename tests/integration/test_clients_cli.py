"""``intentd clients create|list`` and ``intentd keys create --client``: keys only for
recorded clients, by id or name; a typo fails instead of founding a tenant; migration
0012's backfill keeps an existing client's id."""

from __future__ import annotations

import argparse
import json
import secrets
from uuid import UUID

import pytest

from intentd.adapters.postgres import Connection, Pool, api_keys, available_migrations, clients
from intentd.adapters.postgres.api_keys import client_id_of
from intentd.keys_cli import clients_command, keys_command
from intentd.settings import Settings

pytestmark = pytest.mark.integration


async def run_clients(settings: Settings, action: str, **options: object) -> int:
    return await clients_command(argparse.Namespace(clients_command=action, **options), settings)


async def run_keys(settings: Settings, client: str) -> int:
    args = argparse.Namespace(keys_command="create", client=client, mode="test", rate_limit=None)
    return await keys_command(args, settings)


async def test_keys_need_a_recorded_client(
    settings: Settings, pool: Pool, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"shop-{secrets.token_hex(3)}"
    assert await run_keys(settings, name) == 4  # not recorded yet
    assert "create it first: intentd clients create" in capsys.readouterr().err
    assert await run_clients(settings, "create", name=name, exist_ok=False) == 0
    created = json.loads(capsys.readouterr().out)
    assert created["name"] == name
    client_id = UUID(created["client_id"])
    assert client_id != client_id_of(name)  # random, not derived from the name
    assert await run_clients(settings, "create", name=name, exist_ok=False) == 4
    assert "exists already" in capsys.readouterr().err
    assert await run_clients(settings, "create", name=name, exist_ok=True) == 0
    assert json.loads(capsys.readouterr().out)["client_id"] == str(client_id)
    for ref in (name, str(client_id)):
        assert await run_keys(settings, ref) == 0
        key = json.loads(capsys.readouterr().out)
        assert (key["client"], key["client_id"]) == (name, str(client_id))
    assert await run_keys(settings, name + "x") == 4  # a typo
    assert await run_clients(settings, "list") == 0
    listed = json.loads(capsys.readouterr().out)
    assert {"client_id": str(client_id), "name": name} in [
        {k: c[k] for k in ("client_id", "name")} for c in listed
    ]
    async with pool.acquire() as conn:
        assert [k.client_id for k in await api_keys.list_keys(conn)].count(client_id) == 2


async def test_the_backfill_keeps_existing_clients(pool: Pool) -> None:
    """Migration 0012's backfill, replayed on rows written as before it: a key's client
    keeps its UUIDv5 id and its name; a client seen only on intents is named by its id."""
    text = next(m.sql for m in available_migrations() if m.version == 12)
    backfill = text[text.index("INSERT INTO clients") : text.index("ALTER TABLE api_keys")]
    named = f"legacy-{secrets.token_hex(3)}"
    unnamed = client_id_of(f"cli-{secrets.token_hex(3)}")
    async with pool.acquire() as conn:
        replay = conn.transaction()  # rolled back: the session's database stays as it was
        await replay.start()
        try:
            await _replay(conn, backfill, named, unnamed)
        finally:
            await replay.rollback()


async def _replay(conn: Connection, backfill: str, named: str, unnamed: UUID) -> None:
    await conn.execute("ALTER TABLE api_keys DROP CONSTRAINT api_keys_client_fk")
    await conn.execute(
        "INSERT INTO api_keys (id, client_id, client_name, mode, prefix, key_hash)"
        " VALUES (gen_random_uuid(), $1, $2, 'test', 'itd_test_', $3)",
        client_id_of(named),
        named,
        secrets.token_hex(32),
    )
    await conn.execute(
        """INSERT INTO intents (client_id, request_hash, initial_amount, source_chain,
             destination_chain, token_in, token_out, token_out_decimals,
             asset_token_symbol, asset_token_decimals, total_due, amount_out,
             address_index, intent_address, recipient, refund_address, status, expires_at)
           VALUES ($1, 'h', '1', 'BASE_TESTNET', 'ARBITRUM_TESTNET', '0x', '0x', 6, 'USDC',
             6, 1, 1, nextval('intent_address_index_seq'), $2, '0x', '0x', 'PENDING', now())""",
        unnamed,
        "0x" + secrets.token_hex(20),
    )
    await conn.execute(backfill)
    await conn.execute(
        "ALTER TABLE api_keys ADD CONSTRAINT api_keys_client_fk"
        " FOREIGN KEY (client_id) REFERENCES clients (id)"
    )
    by_name = await clients.find(conn, named)
    assert by_name is not None and by_name.id == client_id_of(named)
    by_id = await clients.find(conn, str(unnamed))
    assert by_id is not None and by_id.name == str(unnamed)
