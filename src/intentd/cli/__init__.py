"""The ``intentd`` command: parse arguments, load settings, run a process of roles.

Exit codes: 0 done, 1 runtime failure (a bug; never an outage of PostgreSQL, Kafka or
an RPC provider: the daemons wait those out), 2 usage or configuration error (the
message names the key and value), 3 a request that cannot be served (for example an
invalid intent, a rescan outside the confirmed blocks); ``intents show`` exits 4 when
the intent does not exist.

The daemon commands (``DAEMONS``) catch SIGTERM and SIGINT from their first instant
(``intentd.stopping``) and exit 0 once stopped, whenever the signal came; the one-shot
commands keep the signals' default action once their command line is parsed.

The modules: :mod:`~intentd.cli.parser` (the command line), :mod:`~intentd.cli.main`
(settings and the checks before anything runs), :mod:`~intentd.cli.daemon_commands` (the
long-running commands and ``api``'s workers), :mod:`~intentd.cli.one_shot` (commands
that do one thing and exit).
"""

from __future__ import annotations

from intentd.cli.main import main
from intentd.cli.parser import build_parser

__all__ = ["build_parser", "main"]
