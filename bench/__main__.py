"""``python -m bench [NAME] [OPTIONS]``: run one benchmark, or all of them.

Names: ``backfill`` (poller throughput), ``poller-memory`` (RSS of ``intentd poll`` with
a million watched addresses), ``head-latency`` (see ``bench/head_latency.py``),
``execution-latency`` (FUNDED to prefill broadcast, deposit to completed), ``api-throughput``
(create and get intents over HTTP, see ``bench/api_throughput.py``), ``event-log`` (the
event log's write cost and reads, see ``bench/event_log.py``), ``intent-list``
(``GET /intents``'s query on 10^6 intents, see ``bench/intent_list.py``), ``console-pages``
(the console's overview and payments pages on 10^6 intents, ``bench/console_pages.py``),
``webhooks`` (events on
Kafka to deliveries at local receivers, see ``bench/webhooks.py``), ``webhook-fairness`` (a
healthy client's webhook latency with and without a tarpit client, see
``bench/webhook_fairness.py``), ``watched-set`` (the
pollers' watched set with a watch window on 10^6 intents, see ``bench/watched_set.py``),
``trigger-processing`` (RPC calls and time of one call over 7 days of Base blocks, see
``bench/trigger_processing.py``), ``watch-migration`` (what migration 0013 and its
backfill cost the table's users on 10^6 intents, see ``bench/watch_migration.py``),
``log-proof`` (what proving log answers whole costs the poller's reads, see
``bench/log_proof.py``), ``native-flood`` (a poller following 1 s blocks with 10^4 open
native-coin intents, see ``bench/native_flood.py``), ``quote-latency`` (quotes with
live price feeds against static prices, see ``bench/quote_latency.py``), ``chaos``
(intents of every scenario paid under ``kill -9`` and reorgs, every balance checked;
not part of ``all``, see docs/chaos.md).
``python -m bench NAME --help`` lists a benchmark's options.
"""

from __future__ import annotations

import importlib
import sys

ENTRIES = {
    "backfill": ("backfill", "run"),
    "poller-memory": ("poller_memory", "run"),
    "head-latency": ("head_latency", "main"),
    "execution-latency": ("execution_latency", "main"),
    "api-throughput": ("api_throughput", "run"),
    "event-log": ("event_log", "run"),
    "intent-list": ("intent_list", "run"),
    "console-pages": ("console_pages", "run"),
    "webhooks": ("webhooks", "run"),
    "webhook-fairness": ("webhook_fairness", "run"),
    "watched-set": ("watched_set", "run"),
    "trigger-processing": ("trigger_processing", "run"),
    "watch-migration": ("watch_migration", "run"),
    "log-proof": ("log_proof", "run"),
    "native-flood": ("native_flood", "run"),
    "quote-latency": ("quote_latency", "run"),
}
"""Each benchmark of ``all``: its module in ``bench`` and the function given the options."""
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
        module, function = ENTRIES[entry]
        getattr(importlib.import_module(f"bench.{module}"), function)(rest)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
    else:
        main(sys.argv[1:])
