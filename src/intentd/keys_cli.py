"""``intentd keys create|revoke|list`` and ``intentd clients create|list``.

``clients create NAME`` records a client and prints its id; ``keys create --client
ID|NAME`` then creates a key for that client only, and fails (exit 4) for a client
that does not exist, so a typo never founds a new tenant. ``keys create`` prints the
key once (JSON on stdout); only its SHA-256 is stored, so a lost key cannot be shown
again: revoke it and create another. ``--scope`` restricts a key to some scopes
(``access.scopes``; without it the key may do everything). Creating and revoking keys
is written to the client's audit log, by ``cli``.
"""

from __future__ import annotations

import argparse
import json
import sys
from uuid import UUID

from intentd.access.actors import Actor
from intentd.access.scopes import parse_scopes
from intentd.adapters.postgres import api_keys, clients, create_pool
from intentd.adapters.postgres.api_keys import ApiKey
from intentd.adapters.postgres.clients import Client, ClientExists
from intentd.merchant.keys import create_key, revoke_key
from intentd.settings import Settings

__all__ = ["clients_command", "keys_command"]


def _describe(key: ApiKey) -> dict[str, object]:
    return {
        "key_id": str(key.id),
        "client": key.client_name,
        "client_id": str(key.client_id),
        "mode": key.mode,
        "prefix": key.prefix,
        "rate_limit": key.rate_limit,
        "scopes": sorted(key.scopes) if key.scopes is not None else "all",
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }


def _client_json(client: Client) -> dict[str, object]:
    return {
        "client_id": str(client.id),
        "name": client.name,
        "created_at": client.created_at.isoformat(),
    }


async def clients_command(args: argparse.Namespace, settings: Settings) -> int:
    pool = await create_pool(settings.database.url.get_secret_value(), max_size=1)
    try:
        async with pool.acquire() as conn:
            match args.clients_command:
                case "create":
                    name = args.name.strip()
                    if not 1 <= len(name) <= 200:
                        print("intentd: a client name has 1 to 200 characters", file=sys.stderr)
                        return 3
                    try:
                        client = await clients.create(conn, name)
                    except ClientExists as exc:
                        if not args.exist_ok:
                            print(f"intentd: {exc}", file=sys.stderr)
                            return 4
                        client = exc.existing
                    print(json.dumps(_client_json(client), indent=2))
                    return 0
                case "list":
                    found = await clients.list_clients(conn)
                    print(json.dumps([_client_json(c) for c in found], indent=2))
                    return 0
        raise AssertionError(f"unhandled clients command {args.clients_command}")
    finally:
        await pool.close()


async def keys_command(args: argparse.Namespace, settings: Settings) -> int:
    pool = await create_pool(settings.database.url.get_secret_value(), max_size=1)
    try:
        async with pool.acquire() as conn:
            match args.keys_command:
                case "create":
                    if not args.client.strip() or (
                        args.rate_limit is not None and args.rate_limit < 1
                    ):
                        print(
                            "intentd: --client must not be empty and --rate-limit must be positive",
                            file=sys.stderr,
                        )
                        return 3
                    client = await clients.find(conn, args.client.strip())
                    if client is None:
                        print(
                            f"intentd: no client {args.client.strip()!r} (an id or a name);"
                            " create it first: intentd clients create NAME",
                            file=sys.stderr,
                        )
                        return 4
                    try:
                        scope = getattr(args, "scope", None)
                        scopes = parse_scopes(scope) if scope else None
                    except ValueError as exc:
                        print(f"intentd: --scope: {exc}", file=sys.stderr)
                        return 3
                    key, secret = await create_key(
                        conn,
                        Actor.cli(client.id),
                        client,
                        mode=args.mode,
                        scopes=frozenset(scopes) if scopes is not None else None,
                        rate_limit=args.rate_limit,
                    )
                    print(json.dumps({**_describe(key), "api_key": secret}, indent=2))
                    print(
                        "intentd: store the api_key now; it cannot be shown again", file=sys.stderr
                    )
                    return 0
                case "revoke":
                    try:
                        key_id = UUID(args.key_id)
                    except ValueError:
                        print(f"intentd: {args.key_id!r} is not a key id", file=sys.stderr)
                        return 3
                    found = await api_keys.find_by_id(conn, key_id)
                    revoked = (
                        await revoke_key(conn, Actor.cli(found.client_id), key_id, client_id=None)
                        if found is not None
                        else None
                    )
                    if revoked is None:
                        print(f"intentd: no key {args.key_id}", file=sys.stderr)
                        return 4
                    print(json.dumps(_describe(revoked), indent=2))
                    return 0
                case "list":
                    print(
                        json.dumps([_describe(k) for k in await api_keys.list_keys(conn)], indent=2)
                    )
                    return 0
        raise AssertionError(f"unhandled keys command {args.keys_command}")
    finally:
        await pool.close()
