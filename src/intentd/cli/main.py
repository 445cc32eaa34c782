"""``intentd``'s entry point: settings first, then the checks that refuse to start,
then the command.

Guarantees: a configuration error (at load, or found while running) exits 2 naming the
key; a command that lacks a key it needs (the intent addresses' xpub or mnemonic, the
console's key) exits 2 before anything is served; the tokens of the chains a command
converts amounts for or sends on are checked against their contracts before it runs
(a one-shot command gives up after :data:`ONE_SHOT_TOKEN_CHECKS` tries, exit 1; a
daemon waits for its chains' RPC); only the daemons keep the stop signals caught.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from intentd.cli.daemon_commands import DAEMONS, dispatch, serve_api
from intentd.cli.parser import build_parser
from intentd.custody import IntentKeys
from intentd.observability import configure_logging
from intentd.settings import ConfigError, Settings, load_settings, secret_from_env
from intentd.stopping import PROCESS

__all__ = ["ONE_SHOT_TOKEN_CHECKS", "main"]


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
        return serve_api(args, settings)
    try:
        return asyncio.run(dispatch(args, settings))
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
    (``adapters.evm.token_check``); a worker of ``api --workers`` leaves it to its parent."""
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
    from intentd.adapters.evm.token_check import check_tokens
    from intentd.chain.errors import ChainUnavailable

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
