"""The chaos run (issue 13): N intents of every scenario, paid while intentd's roles are
killed with ``kill -9`` and the chains reorganise; then every balance is checked on chain
to the base unit, and the events. See docs/chaos.md.

    .venv/bin/python -m bench chaos --seed 1 --intents 16 --kills-per-role 2 --reorgs 2
"""

from __future__ import annotations

import argparse
import asyncio

from bench.chaos.driver import Options, run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench chaos", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seed", type=int, default=Options.seed)
    parser.add_argument("--intents", type=int, default=Options.intents, help="N")
    parser.add_argument("--rate", type=float, default=Options.rate, help="intents created a second")
    parser.add_argument("--kills-per-role", type=int, default=Options.kills_per_role)
    parser.add_argument("--reorgs", type=int, default=Options.reorgs, help="reorgs of depth 1..5")
    parser.add_argument("--expires-in", type=int, default=Options.expires_in,
                        help="lifetime of the intents that expire, seconds")  # fmt: skip
    parser.add_argument("--settle-timeout", type=float, default=Options.settle_timeout)
    parser.add_argument("--keep", action="store_true", help="keep the database and the logs")
    args = parser.parse_args(argv)
    options = Options(
        seed=args.seed,
        intents=args.intents,
        rate=args.rate,
        kills_per_role=args.kills_per_role,
        reorgs=args.reorgs,
        expires_in=args.expires_in,
        settle_timeout=args.settle_timeout,
        keep=args.keep,
    )
    figures = asyncio.run(run(options))
    print(figures.report(), flush=True)
    if figures.mismatches:
        raise SystemExit(1)
