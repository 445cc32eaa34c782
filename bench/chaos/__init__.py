"""The chaos run (issues 13 and 18): N intents of every scenario, paid while intentd's
roles are killed with ``kill -9``, the chains reorganise and (``--faults``) the roles'
dependencies fail; then every balance is checked on chain to the base unit, and the
events. See docs/chaos.md.

    .venv/bin/python -m bench chaos --seed 1 --intents 16 --kills-per-role 2 --reorgs 2
    .venv/bin/python -m bench chaos --seed 1 --intents 24 --faults rpc,db,broker
"""

from __future__ import annotations

import argparse
import asyncio

from bench.chaos.driver import Options, run
from bench.chaos.faults import CLASSES, GROUPS, FaultOptions, parse_classes
from bench.chaos.scenarios import SCENARIOS


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
    parser.add_argument("--price-moves", type=int, default=Options.price_moves,
                        help="moves of the ETH / USD feed, within and beyond slippage")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the database and the logs")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="the scenarios dealt round-robin (default: all)")  # fmt: skip
    faults = FaultOptions()
    parser.add_argument(
        "--faults",
        default="",
        help=f"dependency fault classes, comma-separated: {', '.join(GROUPS)} (groups) or"
        f" {', '.join(CLASSES)} (default: none; see docs/chaos.md)",
    )
    parser.add_argument("--fault-bursts", type=int, default=faults.bursts, help="per class")
    parser.add_argument("--fault-seconds", default="{:g},{:g}".format(*faults.seconds),
                        help="MIN,MAX length of a burst, seconds")  # fmt: skip
    parser.add_argument(
        "--fault-share",
        type=float,
        default=faults.share,
        help="share of the RPC POSTs a burst hits (lag: lands on the slow node)",
    )
    parser.add_argument("--lag-blocks", type=int, default=faults.lag_blocks)
    parser.add_argument("--receipt-blocks", type=int, default=faults.receipt_blocks)
    parser.add_argument("--stale-blocks", type=int, default=faults.stale_blocks)
    parser.add_argument(
        "--fault-overlap",
        action="store_true",
        help="let bursts overlap (default: each waits until the last one was measured)",
    )
    args = parser.parse_args(argv)
    low, high = (float(x) for x in args.fault_seconds.split(","))
    scenarios = tuple(s for s in args.scenarios.split(",") if s)
    if unknown := set(scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenarios {sorted(unknown)}; known: {', '.join(SCENARIOS)}")
    try:
        classes = parse_classes(args.faults)
    except ValueError as exc:
        parser.error(str(exc))
    options = Options(
        seed=args.seed,
        intents=args.intents,
        rate=args.rate,
        kills_per_role=args.kills_per_role,
        reorgs=args.reorgs,
        expires_in=args.expires_in,
        settle_timeout=args.settle_timeout,
        price_moves=args.price_moves,
        keep=args.keep,
        scenarios=scenarios,
        faults=FaultOptions(
            classes=classes,
            bursts=args.fault_bursts,
            seconds=(low, high),
            share=args.fault_share,
            lag_blocks=args.lag_blocks,
            receipt_blocks=args.receipt_blocks,
            stale_blocks=args.stale_blocks,
            overlap=args.fault_overlap,
        ),
    )
    figures = asyncio.run(run(options))
    print(figures.report(), flush=True)
    if figures.failed:
        raise SystemExit(1)
