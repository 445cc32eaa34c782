"""``python -m bench [NAME] [OPTIONS]``: run one benchmark, or all of them.

``python -m bench --help`` lists them (:data:`ENTRIES`, one line each, plus ``chaos``:
intents of every scenario paid under ``kill -9``, reorgs and dependency faults, every
balance checked; not part of ``all``, see docs/chaos.md); ``python -m bench NAME
--help`` lists a benchmark's options. Each module's docstring says what it measures.
"""

from __future__ import annotations

import importlib
import sys

ENTRIES = {
    "backfill": ("backfill", "run", "poller throughput"),
    "poller-memory": ("poller_memory", "run", "RSS of intentd poll with 10^6 watched addresses"),
    "head-latency": ("head_latency", "main", "block to published deposit"),
    "execution-latency": ("execution_latency", "main", "FUNDED to prefill; deposit to completed"),
    "api-throughput": ("api_throughput", "run", "create and get intents over HTTP"),
    "event-log": ("event_log", "run", "the event log's write cost and reads"),
    "intent-list": ("intent_list", "run", "GET /intents on 10^6 intents"),
    "console-pages": ("console_pages", "run", "the console's pages on 10^6 intents"),
    "webhooks": ("webhooks", "run", "events on Kafka to deliveries at local receivers"),
    "webhook-fairness": ("webhook_fairness", "run", "a client's webhooks beside a tarpit"),
    "watched-set": ("watched_set", "run", "the pollers' watched set on 10^6 intents"),
    "trigger-processing": ("trigger_processing", "run", "one call over 7 days of blocks"),
    "watch-migration": ("watch_migration", "run", "migration 0013 and its backfill"),
    "log-proof": ("log_proof", "run", "what proving log answers whole costs the poller"),
    "native-flood": ("native_flood", "run", "a poller with 10^4 open native-coin intents"),
    "quote-latency": ("quote_latency", "run", "quotes with live feeds against static prices"),
    "api-database": ("api_database", "run", "the API's bounded database use"),
    "relayer-float": ("relayer_float", "run", "reading the relayer's float on 10^6 intents"),
    "report-export": ("report_export", "run", "report exports of 10^6 rows: time and RSS"),
}
"""Each benchmark of ``all``: its module in ``bench``, the function given the options,
and what it measures."""
NAMES = tuple(ENTRIES)


def main(argv: list[str]) -> None:
    name, rest = (argv[0], argv[1:]) if argv else ("all", [])
    if name == "chaos":
        from bench import chaos

        chaos.main(rest)
        return
    if name not in {*NAMES, "all"}:
        raise SystemExit(f"unknown benchmark {name!r}; one of {', '.join(NAMES)}, chaos")
    for entry in NAMES if name == "all" else (name,):
        module, function, _ = ENTRIES[entry]
        getattr(importlib.import_module(f"bench.{module}"), function)(rest)


def usage() -> str:
    width = max(map(len, NAMES))
    lines = [f"  {name:<{width}}  {what}" for name, (_, _, what) in ENTRIES.items()]
    return f"{__doc__}\nbenchmarks:\n" + "\n".join(lines) + f"\n  {'chaos':<{width}}  docs/chaos.md"


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(usage())
    else:
        main(sys.argv[1:])
