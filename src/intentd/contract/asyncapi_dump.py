"""``python -m intentd.contract.asyncapi_dump [PATH]`` (``make asyncapi``): write the
AsyncAPI 3 document of the Kafka topics (:mod:`intentd.contract.asyncapi`) to
``docs/asyncapi.json``; ``tests/unit/contract`` keep the committed file equal to it."""

from __future__ import annotations

import sys
from pathlib import Path

from intentd.contract.asyncapi import document
from intentd.contract.formats import document_bytes

__all__ = ["DEFAULT_PATH", "main"]

DEFAULT_PATH = Path("docs/asyncapi.json")


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_bytes(document_bytes(document()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
