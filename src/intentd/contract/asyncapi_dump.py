"""``python -m intentd.contract.asyncapi_dump [PATH]`` (``make asyncapi``): write the
AsyncAPI 3 document of the Kafka topics (:mod:`intentd.contract.asyncapi`) to
``docs/asyncapi.json``; ``tests/unit/contract`` keep the committed file equal to it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from intentd.contract.asyncapi import document

__all__ = ["DEFAULT_PATH", "main", "render"]

DEFAULT_PATH = Path("docs/asyncapi.json")


def render(doc: dict[str, Any]) -> bytes:
    """The file's bytes: sorted keys, two-space indents, a final newline (stable diffs)."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_bytes(render(document()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
