"""``python -m intentd_dev.devinfra up|down|status``: ``make infra-up|infra-down|infra-status``.

Exit status: 0 on success; 1 if a component failed (the message names it and its log);
for ``status``, 3 if some component is not running.
"""

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from intentd_dev.devinfra import stack
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import find_layout

EXIT_FAILED = 1
EXIT_NOT_RUNNING = 3


def say(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m intentd_dev.devinfra", description=__doc__)
    parser.add_argument("command", choices=("up", "down", "status"))
    command = parser.parse_args(argv).command
    started = time.monotonic()
    try:
        layout = find_layout()
        if command == "status":
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `status | head` ends quietly
            return 0 if stack.status(layout, say) else EXIT_NOT_RUNNING
        with layout.exclusive():
            if command == "up":
                stack.up(layout, say)
            else:
                stack.down(layout, say)
    except InfraError as error:
        print(f"infra {command} failed: {error}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    say(f"infra {command}: done in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
