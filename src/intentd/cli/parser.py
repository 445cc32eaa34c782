"""The command line of ``intentd``: every command, its options and their help.

Guarantees: parsing has no effect but the parsed arguments (``--version`` and
``--help`` print and exit); ``--config`` defaults to ``$INTENTD_CONFIG``, else
:data:`DEFAULT_CONFIG`.
"""

from __future__ import annotations

import argparse
import os

from intentd import __version__
from intentd.contract.mode import MODES

__all__ = ["DEFAULT_CONFIG", "DESCRIPTION", "build_parser"]

DEFAULT_CONFIG = "config/local.toml"
DESCRIPTION = "The ``intentd`` command: parse arguments, load settings, run a process of roles."


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
    parser = argparse.ArgumentParser(prog="intentd", description=DESCRIPTION)
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
