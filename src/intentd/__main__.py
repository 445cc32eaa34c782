"""``python -m intentd``: catch SIGTERM before the rest of intentd is imported."""

from intentd.stopping import PROCESS

PROCESS.install()  # a stop during the imports below is remembered (docs/operations.md)

from intentd.cli import main  # noqa: E402

raise SystemExit(main())
