"""The ``intentd`` command (console script and ``python -m intentd``): catch SIGTERM
before the rest of intentd is imported (``intentd.stopping``), then run the CLI."""

from intentd.stopping import PROCESS


def run() -> None:
    PROCESS.install()  # a stop during the imports below ends it at once, status 0
    from intentd.cli import main  # after the handlers, on purpose

    raise SystemExit(main())


if __name__ == "__main__":
    run()
