"""The ``intentd`` command: parse arguments, load settings, run a process of roles.

Exit codes: 0 done, 1 runtime failure (a bug; never an outage of PostgreSQL, Kafka or
an RPC provider: the daemons wait those out), 2 usage or configuration error (the
message names the key and value), 3 a request that cannot be served (for example an
invalid intent, a rescan outside the confirmed blocks); ``intents show`` exits 4 when
the intent does not exist.

The daemon commands (``DAEMONS``) catch SIGTERM and SIGINT from their first instant
(``intentd.stopping``) and exit 0 once stopped, whenever the signal came; the one-shot
commands keep the signals' default action once their command line is parsed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import structlog

from intentd import __version__
from intentd.adapters import intent_store
from intentd.adapters.backfills import backfill
from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.adapters.relayer_float import PostgresFloatSource
from intentd.contract.mode import MODES
from intentd.contract.record import IntentRow, render_record
from intentd.custody import IntentKeys
from intentd.intents.admission import AdmittingWriter, LiquidityGate
from intentd.intents.service import IntentRequest, IntentRequestError, create_intent
from intentd.observability import configure_logging
from intentd.runtime import run_roles
from intentd.settings import ConfigError, Settings, load_settings, secret_from_env
from intentd.stopping import PROCESS, Stopping
from intentd.wait import Stopped, until_stopped

if TYPE_CHECKING:
    from intentd.composition.process import Roles

DEFAULT_CONFIG = "config/local.toml"
DAEMONS = frozenset({"run", "poll", "execute", "lifecycle", "webhooks", "api"})


def _add_clients(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    clients = sub.add_parser("clients", help="create and list clients (the tenants keys act for)")
    csub = clients.add_subparsers(dest="clients_command", required=True, metavar="ACTION")
    ccreate = csub.add_parser("create", help="record a client and print its id, as JSON")
    ccreate.add_argument("name", help="the client's name, unique (1 to 200 characters)")
    ccreate.add_argument(
        "--exist-ok",
        action="store_true",
        help="a client of that name exists already: print it and succeed (for scripts)",
    )
    csub.add_parser("list", help="list clients (ids, names, creation times)")


def _add_keys(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = sub.add_parser("keys", help="create, revoke and list API keys")
    ksub = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    kcreate = ksub.add_parser("create", help="create a key and print it once, as JSON")
    kcreate.add_argument(
        "--client",
        required=True,
        help="an existing client's id or name (intentd clients create); its keys share intents",
    )
    kcreate.add_argument("--mode", required=True, choices=MODES)
    kcreate.add_argument(
        "--rate-limit", type=int, help="requests per second (default: api.default_rate_limit)"
    )
    kcreate.add_argument(
        "--scope",
        action="append",
        help="restrict the key to this scope (repeat, or a comma list; default: every scope):"
        " intents:read, intents:write, refunds, webhooks, events:read, reports:read",
    )
    krevoke = ksub.add_parser("revoke", help="revoke a key by its id")
    krevoke.add_argument("key_id", help="the key's id (printed at creation and by keys list)")
    ksub.add_parser("list", help="list keys (ids, clients, modes, prefixes; never the keys)")
    ksub.add_parser(
        "xpub",
        help="print the extended public key of intent addresses (m/44'/60'/0'/0) from the"
        " mnemonic in INTENTD_HD_MNEMONIC(_FILE); needs no config",
    )


def _add_rescan(isub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rescan = isub.add_parser(
        "rescan", help="credit what reached an intent address in a block range (late payments)"
    )
    rescan.add_argument("address", help="intent address")
    rescan.add_argument("--chain", required=True, help="the chain the payment was made on")
    rescan.add_argument("--from-block", type=int, required=True)
    rescan.add_argument("--to-block", type=int, required=True, help="at most the confirmed head")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="intentd", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"intentd {__version__}")
    parser.add_argument(
        "--config",
        default=os.environ.get("INTENTD_CONFIG", DEFAULT_CONFIG),
        help="TOML config file (default: $INTENTD_CONFIG or %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("migrate", help="apply database migrations (idempotent)")
    poll = sub.add_parser("poll", help="follow one chain and publish its deposits")
    poll.add_argument("--chain", required=True, help="chain name, e.g. BASE_TESTNET")
    execute = sub.add_parser("execute", help="perform one chain's actions (one active per chain)")
    execute.add_argument("--chain", required=True, help="chain name, e.g. BASE_TESTNET")
    sub.add_parser("lifecycle", help="apply deposits to intents and relay events")
    sub.add_parser("webhooks", help="deliver intent events to merchants' webhook endpoints")
    run = sub.add_parser("run", help="every role in one process (development, small sites)")
    run.add_argument("--no-migrate", action="store_true", help="do not migrate at start")
    api = sub.add_parser("api", help="serve the HTTP API (/api/v1)")
    api.add_argument("--host", help="listen address (default: api.host)")
    api.add_argument("--port", type=int, help="listen port (default: api.port)")
    api.add_argument(
        "--workers", type=int, help="processes sharing the port (default: api.workers)"
    )
    api.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # see api.workers

    _add_keys(sub)
    _add_clients(sub)
    status = sub.add_parser(
        "status", help="the relayer's float on every chain (from PostgreSQL), as a table"
    )
    status.add_argument("--json", action="store_true", help="as JSON, amounts in base units")

    from intentd.users_cli import add_users_parser

    add_users_parser(sub)

    intents = sub.add_parser("intents", help="create and inspect intents")
    isub = intents.add_subparsers(dest="intents_command", required=True, metavar="ACTION")
    create = isub.add_parser("create", help="create an intent and print its record as JSON")
    create.add_argument("--source-chain", required=True)
    create.add_argument("--destination-chain", required=True)
    create.add_argument("--token-in", required=True, help="token address on the source chain")
    create.add_argument("--token-out", help="token address on the destination chain")
    create.add_argument("--amount", required=True, help="decimal amount in tokenIn units")
    create.add_argument("--amount-symbol")
    create.add_argument("--recipient", required=True)
    create.add_argument("--refund-address", required=True)
    create.add_argument("--sender")
    create.add_argument("--metadata", help="JSON object")
    create.add_argument("--expires-in", type=int, help="seconds until expiry")
    create.add_argument(
        "--slippage", help='for an amount converted at a price: a fraction such as "0.005"'
    )
    create.add_argument("--client-id", help="client UUID (default: intents.default_client_id)")
    create.add_argument("--idempotency-key")
    show = isub.add_parser("show", help="print an intent record as JSON")
    show.add_argument("intent", help="intent id or intent address")
    _add_rescan(isub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    PROCESS.install()  # again (intentd.__main__.run did already): main is called alone too
    args = build_parser().parse_args(argv)
    if args.command not in DAEMONS:
        PROCESS.release()
    if args.command == "keys" and args.keys_command == "xpub":
        return _print_xpub()
    try:
        settings = load_settings(Path(args.config))
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.observability.log_level)
    if _refused_before_serving(args, settings):
        return 2
    checked = _token_checks(args, settings)
    if checked:
        failed = _check_tokens(settings, checked, daemon=args.command in DAEMONS)
        if failed:
            return failed
    if args.command == "api":
        return _serve_api(args, settings)
    try:
        return asyncio.run(_dispatch(args, settings))
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 2
    except BaseExceptionGroup as group:  # the roles' task groups: a configuration error found
        found = _config_error(group)  # while running (the database refused the credentials)
        if found is None:
            raise
        print(f"intentd: {found}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - signal handlers normally catch it
        return 130


def _config_error(group: BaseExceptionGroup[BaseException]) -> ConfigError | None:
    """The configuration error a group of errors ends with, if it is one (every other
    leaf is the cancellation it caused)."""
    configs = group.subgroup(ConfigError)
    if configs is None:
        return None
    leaves: list[BaseException] = list(configs.exceptions)
    while leaves and isinstance(leaves[0], BaseExceptionGroup):
        leaves = list(leaves[0].exceptions) + leaves[1:]
    first = leaves[0] if leaves else None
    return first if isinstance(first, ConfigError) else None


def _refused_before_serving(args: argparse.Namespace, settings: Settings) -> bool:
    """Whether the command lacks a key it needs (the xpub, or the mnemonic, of intent
    addresses; a well-formed ``INTENTD_CONSOLE_KEY`` for the console of ``api`` and
    ``run``); says why, naming the key, before anything is served."""
    try:
        if _derives_addresses(args):
            settings.intent_addresses()
        if args.command in ("api", "run") and settings.console.enabled:
            from intentd.console.state import ConsoleState

            ConsoleState.of_settings(settings)
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return True
    return False


def _derives_addresses(args: argparse.Namespace) -> bool:
    return args.command in ("api", "run") or (
        args.command == "intents" and args.intents_command == "create"
    )


def _token_checks(args: argparse.Namespace, settings: Settings) -> list[str]:
    """Chains whose tokens the command checks against their contracts at start: those
    it turns decimal amounts into base units for or sends tokens on
    (``adapters.token_check``); a worker of ``api --workers`` leaves it to its parent."""
    match args.command:
        case "api" if not args.worker:
            return list(settings.chains)
        case "run":
            return list(settings.chains)
        case "intents" if args.intents_command == "create":
            return list(settings.chains)
        case "execute":
            return [args.chain]
    return []


ONE_SHOT_TOKEN_CHECKS = 3
"""Tries of the token check by a one-shot command before it gives up (exit 1); a daemon
waits for its chains' RPC as long as it takes (a signal ends the wait, exit 0)."""


def _check_tokens(settings: Settings, chains: list[str], *, daemon: bool) -> int:
    from intentd.adapters.token_check import check_tokens
    from intentd.indexer.ports import ChainUnavailable

    attempts = None if daemon else ONE_SHOT_TOKEN_CHECKS
    try:
        asyncio.run(check_tokens(settings, chains, attempts=attempts))
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 2
    except ChainUnavailable as exc:
        print(f"intentd: cannot check the tokens against their contracts: {exc}", file=sys.stderr)
        return 1
    return 0


def _print_xpub() -> int:
    """``intentd keys xpub``: what the API, pollers and lifecycle are given instead of
    the mnemonic (INTENTD_HD_XPUB); a wallet with the mnemonic shows the same string."""
    try:
        mnemonic = secret_from_env(os.environ, "INTENTD_HD_MNEMONIC")
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 2
    if mnemonic is None:
        print("intentd: give INTENTD_HD_MNEMONIC or INTENTD_HD_MNEMONIC_FILE", file=sys.stderr)
        return 2
    print(IntentKeys(mnemonic).xpub.serialize())
    return 0


def _serve_api(args: argparse.Namespace, settings: Settings) -> int:
    """``intentd api``: one process on uvloop, or with ``--workers N`` a parent watching
    N worker processes that share the port (``api.workers``)."""
    import uvloop

    if args.worker:
        from intentd.api.workers import die_with_parent

        die_with_parent()
    workers = args.workers or settings.api.workers
    supervise = workers > 1 and not args.worker
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(
                _supervise(args, settings, workers) if supervise else _dispatch(args, settings)
            )
    except ConfigError as exc:
        print(f"intentd: {exc}", file=sys.stderr)
        return 2


async def _supervise(args: argparse.Namespace, settings: Settings, workers: int) -> int:
    import tempfile

    from intentd.api.workers import STOP_TIMEOUT, multiprocess_registry, supervise_workers

    command = [sys.executable, "-m", "intentd", "--config", args.config, "api", "--worker"]
    if args.host:
        command += ["--host", args.host]
    if args.port:
        command += ["--port", str(args.port)]
    shares = {"INTENTD__API__WORKERS": str(workers)}  # the workers' rate-limit shares
    with (
        PROCESS.watching() as stopping,
        tempfile.TemporaryDirectory(prefix="intentd-api-metrics-") as directory,
    ):
        await run_roles(
            [supervise_workers(command, workers, directory, shares)],
            metrics_port=settings.observability.metrics_port,
            registry=multiprocess_registry(directory),
            drain_seconds=STOP_TIMEOUT + 5.0,  # its own stop kills workers after STOP_TIMEOUT
            stopping=stopping,
        )
    return 0


async def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command not in DAEMONS:
        return await _one_shot(args, settings)
    with PROCESS.watching() as stopping:
        return await _daemon(args, settings, stopping)


async def _one_shot(args: argparse.Namespace, settings: Settings) -> int:
    match args.command:
        case "migrate":
            return await _migrate(settings)
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


async def _daemon(args: argparse.Namespace, settings: Settings, stopping: Stopping) -> int:
    from intentd.composition.process import Roles, run_process  # the roles' imports are heavy

    match args.command:
        case "api":
            from intentd.api.server import bind

            if settings.hd_mnemonic is not None:
                structlog.get_logger().warning(
                    "the API holds the HD mnemonic, which it never needs; give it"
                    " INTENTD_HD_XPUB instead (docs/configuration.md, Keys)"
                )
            # A worker's parent says how many workers share the rate limits.
            settings = _with_workers(settings, settings.api.workers if args.worker else 1)
            sock = bind(
                args.host or settings.api.host,
                args.port or settings.api.port,
                reuse_port=args.worker,
            )
            await run_process(
                settings,
                Roles(api=True),
                metrics_port=None if args.worker else settings.observability.metrics_port,
                api_socket=sock,
                stopping=stopping,
            )
        case "poll":
            await _run(settings, Roles(pollers=(args.chain,)), stopping)
        case "lifecycle":
            await _run(settings, Roles(lifecycle=True), stopping)
        case "webhooks":
            await _run(settings, Roles(webhooks=True), stopping)
        case "execute":
            await _run(settings, Roles(executors=(args.chain,)), stopping)
        case "run":
            if not args.no_migrate:
                try:
                    await until_stopped(_migrate(settings), stopping.stop)
                except Stopped:
                    return 0  # a stopped migration or backfill goes on at the next run
            settings = _with_workers(settings, 1)
            await _run(settings, Roles.everything(settings), stopping)
        case _:
            raise AssertionError(f"unhandled command {args.command}")
    return 0


def _with_workers(settings: Settings, workers: int) -> Settings:
    """``settings`` for a process of ``intentd api`` among ``workers`` (rate limits)."""
    api = settings.api.model_copy(update={"workers": workers})
    return settings.model_copy(update={"api": api})


async def _run(settings: Settings, roles: Roles, stopping: Stopping) -> None:
    from intentd.composition.process import run_process

    await run_process(
        settings, roles, metrics_port=settings.observability.metrics_port, stopping=stopping
    )


async def _migrate(settings: Settings) -> int:
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
    from intentd.adapters.price_feeds import running_prices

    try:
        async with running_prices(settings) as prices:  # feeds read once, docs/pricing.md
            row = await create_intent(
                settings,
                AdmittingWriter(
                    intent_store.PostgresIntentStore(pool),
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
    from intentd.composition.rescan import RescanRefused, rescan
    from intentd.indexer.planning import BlockRange

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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
