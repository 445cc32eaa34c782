"""The command line of the sized benchmarks: whole-number options, flags, a JSON report."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["options", "print_report"]


def options(
    argv: list[str], doc: str, flags: Mapping[str, str] | None = None, **numbers: int
) -> argparse.Namespace:
    """``argv`` parsed: ``--NAME N`` for each of ``numbers`` (its value the default;
    ``_`` in a name is ``-`` on the command line), ``--FLAG`` for each of ``flags``
    (with its help); the description is ``doc``'s first line."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, default in numbers.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    for name, text in (flags or {}).items():
        parser.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=text)
    return parser.parse_args(argv)


def print_report(result: Any) -> None:
    print(json.dumps(result, indent=2))
