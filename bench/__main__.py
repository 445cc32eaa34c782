"""``python -m bench [NAME] [OPTIONS]``: run one benchmark, or all of them.

Names: ``backfill`` (poller throughput), ``poller-memory`` (RSS of ``intentd poll`` with
a million watched addresses), ``head-latency`` (see ``bench/head_latency.py``),
``execution-latency`` (FUNDED to prefill broadcast, deposit to completed), ``api-throughput``
(create and get intents over HTTP, see ``bench/api_throughput.py``), ``event-log`` (the
event log's write cost and reads, see ``bench/event_log.py``), ``intent-list``
(``GET /intents``'s query on 10^6 intents, see ``bench/intent_list.py``), ``webhooks`` (events on
Kafka to deliveries at local receivers, see ``bench/webhooks.py``), ``watched-set`` (the
pollers' watched set with a watch window on 10^6 intents, see ``bench/watched_set.py``),
``trigger-processing`` (RPC calls and time of one call over 7 days of Base blocks, see
``bench/trigger_processing.py``), ``chaos`` (intents of every scenario paid under
``kill -9`` and reorgs, every balance checked; not part of ``all``, see docs/chaos.md).
``python -m bench NAME --help`` lists a benchmark's options.
"""

from __future__ import annotations

import sys

NAMES = (
    "backfill",
    "poller-memory",
    "head-latency",
    "execution-latency",
    "api-throughput",
    "event-log",
    "intent-list",
    "webhooks",
    "watched-set",
    "trigger-processing",
)


def main(argv: list[str]) -> None:
    name, rest = (argv[0], argv[1:]) if argv else ("all", [])
    if name == "chaos":
        from bench import chaos

        chaos.main(rest)
        return
    if name not in {*NAMES, "all"}:
        raise SystemExit(f"unknown benchmark {name!r}; one of {', '.join(NAMES)}")
    if name in {"backfill", "all"}:
        from bench import backfill

        backfill.run(rest)
    if name in {"poller-memory", "all"}:
        from bench import poller_memory

        poller_memory.run(rest)
    if name in {"head-latency", "all"}:
        from bench import head_latency

        head_latency.main(rest)
    if name in {"execution-latency", "all"}:
        from bench import execution_latency

        execution_latency.main(rest)
    if name in {"api-throughput", "all"}:
        from bench import api_throughput

        api_throughput.run(rest)
    if name in {"event-log", "all"}:
        from bench import event_log

        event_log.run(rest)
    if name in {"intent-list", "all"}:
        from bench import intent_list

        intent_list.run(rest)
    if name in {"webhooks", "all"}:
        from bench import webhooks

        webhooks.run(rest)
    if name in {"watched-set", "all"}:
        from bench import watched_set

        watched_set.run(rest)
    if name in {"trigger-processing", "all"}:
        from bench import trigger_processing

        trigger_processing.run(rest)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
    else:
        main(sys.argv[1:])
