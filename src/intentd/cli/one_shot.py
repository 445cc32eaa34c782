"""The one-shot commands: ``migrate``, ``intents create|show|rescan``, and the
``keys``, ``clients``, ``status`` and ``users`` commands of their own modules.

Guarantees: each opens what it needs (a pool of two connections at most), closes it,
prints its answer (JSON for intents) and returns the exit code: 3 for a request that
cannot be served (an invalid intent, ``--metadata`` not JSON, a refused rescan), 4 for
``intents show`` of an intent that does not exist, 2 for a malformed block range.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from uuid import UUID

import structlog

from intentd.adapters.postgres import Pool, create_pool, intent_inserts, intent_store, migrate
from intentd.adapters.postgres.backfills import backfill
from intentd.adapters.postgres.relayer_float import PostgresFloatSource
from intentd.contract.record import IntentRow, render_record
from intentd.intents.admission import AdmittingWriter, LiquidityGate
from intentd.intents.service import IntentRequest, IntentRequestError, create_intent
from intentd.settings import Settings

__all__ = ["migrate_and_backfill", "one_shot"]


async def one_shot(args: argparse.Namespace, settings: Settings) -> int:
    match args.command:
        case "migrate":
            return await migrate_and_backfill(settings)
        case "intents":
            return await _intents(args, settings)
        case "keys":
            from intentd.keys_cli import keys_command

            return await keys_command(args, settings)
        case "clients":
            from intentd.keys_cli import clients_command

            return await clients_command(args, settings)
        case "status":
            from intentd.status_cli import status_command

            return await status_command(args, settings)
        case "users":
            from intentd.users_cli import users_command

            return await users_command(args, settings)
    raise AssertionError(f"unhandled command {args.command}")


async def migrate_and_backfill(settings: Settings) -> int:
    pool = await create_pool(settings.database.url.get_secret_value(), max_size=2)
    try:
        applied = await migrate(pool)
        structlog.get_logger().info(
            "migrated", applied=[f"{m.version:04d}_{m.name}" for m in applied]
        )
        # Rows a migration left to fill in, in short batches (a stop resumes on the next run).
        filled = await backfill(pool)
    finally:
        await pool.close()
    structlog.get_logger().info("backfilled", rows=filled)
    return 0


async def _intents(args: argparse.Namespace, settings: Settings) -> int:
    pool = await create_pool(settings.database.url.get_secret_value(), max_size=2)
    try:
        if args.intents_command == "create":
            return await _create(args, settings, pool)
        if args.intents_command == "rescan":
            return await _rescan(args, settings, pool)
        async with pool.acquire() as conn:
            row: IntentRow | None
            if args.intent.isdigit():
                row = await intent_store.get_by_id(conn, int(args.intent))
            else:
                row = await intent_store.get_by_address(conn, args.intent)
        if row is None:
            print(f"intentd: no intent {args.intent!r}", file=sys.stderr)
            return 4
        print(json.dumps(render_record(row), indent=2))
        return 0
    finally:
        await pool.close()


async def _create(args: argparse.Namespace, settings: Settings, pool: Pool) -> int:
    try:
        metadata = json.loads(args.metadata) if args.metadata else None
    except json.JSONDecodeError as exc:
        print(f"intentd: --metadata is not JSON: {exc}", file=sys.stderr)
        return 3
    request = IntentRequest(
        amount=args.amount,
        token_in=args.token_in,
        source_chain=args.source_chain,
        destination_chain=args.destination_chain,
        recipient=args.recipient,
        refund_address=args.refund_address,
        sender=args.sender,
        amount_symbol=args.amount_symbol,
        token_out=args.token_out,
        metadata=metadata,
        expires_in=args.expires_in,
        slippage=args.slippage,
    )
    client_id = UUID(args.client_id or settings.intents.default_client_id)
    gate = LiquidityGate(settings)
    if gate.enabled:  # the float as the API sees it (docs/api.md, insufficient_liquidity)
        source = PostgresFloatSource(pool, timeout=settings.api.db_acquire_timeout)
        gate.load(await source.relayer_floats() or [])
    from intentd.adapters.evm.price_feeds import running_prices

    try:
        async with running_prices(settings) as prices:  # feeds read once, docs/pricing.md
            row = await create_intent(
                settings,
                AdmittingWriter(
                    intent_inserts.PostgresIntentStore(pool),
                    settings.intent_addresses(),
                    gate=gate if gate.enabled else None,
                    max_pending=settings.intents.max_open_per_client,
                ),
                request,
                client_id=client_id,
                now=datetime.now(UTC),
                idempotency_key=args.idempotency_key,
                prices=prices,
            )
    except IntentRequestError as exc:
        where = f"{exc.field}: " if exc.field else ""
        print(f"intentd: {where}{exc} [{exc.code}]", file=sys.stderr)
        return 3
    print(json.dumps(render_record(row), indent=2))
    return 0


async def _rescan(args: argparse.Namespace, settings: Settings, pool: Pool) -> int:
    from intentd.chain.blocks import BlockRange
    from intentd.composition.rescan import RescanRefused, rescan

    if not 0 <= args.from_block <= args.to_block:
        print("intentd: --from-block must be at most --to-block, both >= 0", file=sys.stderr)
        return 2
    blocks = BlockRange(args.from_block, args.to_block)
    try:
        done = await rescan(settings, pool, args.address, args.chain, blocks, now=datetime.now(UTC))
    except RescanRefused as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 3
    found = [{"id": key, "amount": str(amount), "outcome": o} for key, amount, o in done.found]
    print(json.dumps({"intent": render_record(done.intent), "found": found}, indent=2))
    return 0
