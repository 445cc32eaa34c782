"""``python -m intentd_dev.feeds``: move the dev chains' mock price feeds (``make infra-up``).

    python -m intentd_dev.feeds show
    python -m intentd_dev.feeds price ETH 3100.5          # a new round on both dev chains
    python -m intentd_dev.feeds price USDT 0.97 --chain BASE_TESTNET
    python -m intentd_dev.feeds stale ETH --age 7200      # last updated two hours ago
    python -m intentd_dev.feeds incomplete ETH            # answeredInRound < roundId
    python -m intentd_dev.feeds live ETH                  # fresh again, at its last answer
    python -m intentd_dev.feeds sequencer down
    python -m intentd_dev.feeds sequencer up --since 0    # just back: within its grace
    python -m intentd_dev.feeds sequencer up              # up since 1970: no grace

Feeds and addresses: ``intentd_dev.devinfra.feeds``; docs/local-infrastructure.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from web3 import Web3

from intentd_dev.devinfra import feeds
from intentd_dev.devinfra.chains import DEV_CHAINS
from intentd_dev.devinfra.contracts import connect
from intentd_dev.devinfra.envfile import load_infra_env
from intentd_dev.devinfra.errors import InfraError


def _usd(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not a decimal number") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m intentd_dev.feeds",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--chain", choices=[c.name for c in DEV_CHAINS], help="one dev chain (default: both)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("show", help="print every feed's latest round")
    price = commands.add_parser("price", help="publish a new round at a USD price")
    price.add_argument("symbol")
    price.add_argument("usd", type=_usd)
    stale = commands.add_parser("stale", help="pin the round as updated --age seconds ago")
    stale.add_argument("symbol")
    stale.add_argument("--age", type=int, default=7200)
    incomplete = commands.add_parser("incomplete", help="pin an incomplete round")
    incomplete.add_argument("symbol")
    live = commands.add_parser("live", help="a fresh round at the last answer, kept fresh")
    live.add_argument("symbol")
    sequencer = commands.add_parser("sequencer", help="say the L2 sequencer is up or down")
    sequencer.add_argument("status", choices=("up", "down"))
    sequencer.add_argument(
        "--since", type=int, help="seconds ago the status changed (up default: since 1970)"
    )
    return parser


def _apply(w3: Web3, args: argparse.Namespace, chain: str) -> str:
    if args.command == "show":
        rows = []
        for symbol in [f.symbol for f in feeds.DEV_FEEDS] + ["sequencer"]:
            found = feeds.latest_round(w3, feeds.feed_address(symbol))
            rows.append(f"{chain} {symbol}: {found}")
        return "\n".join(rows)
    if args.command == "sequencer":
        now = int(time.time())
        since = (
            (now - args.since) if args.since is not None else (1 if args.status == "up" else now)
        )
        feeds.set_sequencer(w3, up=args.status == "up", since=since)
        return f"{chain}: sequencer {args.status} since {since}"
    address = feeds.feed_address(args.symbol)
    if args.command == "price":
        feeds.set_price(w3, address, args.usd)
        return f"{chain}: {args.symbol} = {args.usd} USD"
    round_id, answer, _, updated, _ = feeds.latest_round(w3, address)
    if args.command == "live":
        feeds.set_price(w3, address, Decimal(answer).scaleb(-feeds.DECIMALS))
        feeds.set_live(w3, address, True)
        return f"{chain}: {args.symbol} live again"
    if args.command == "stale":
        then = int(time.time()) - args.age
        feeds.set_round(
            w3,
            address,
            round_id=round_id,
            answer=answer,
            started_at=then,
            updated_at=then,
            answered_in_round=round_id,
        )
        return f"{chain}: {args.symbol} last updated {args.age} s ago"
    feeds.set_round(
        w3,
        address,
        round_id=round_id + 1,
        answer=answer,
        started_at=updated,
        updated_at=updated,
        answered_in_round=round_id,
    )
    return f"{chain}: {args.symbol} round {round_id + 1} incomplete"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        env = load_infra_env()
        for chain in DEV_CHAINS:
            if args.chain in (None, chain.name):
                with connect(env[f"INTENTD_{chain.name}_RPC_URL"]) as w3:
                    print(_apply(w3, args, chain.name), flush=True)
    except InfraError as error:
        print(f"feeds: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
