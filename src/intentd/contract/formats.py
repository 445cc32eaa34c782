"""How values look in public JSON: EIP-55 addresses, UTC times, decimal strings, string
enums as JSON Schema ``enum`` lists, and the committed documents' bytes (pure)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any, Literal

import orjson
from eth_utils import to_checksum_address

__all__ = [
    "address_text",
    "decimal_text",
    "document_bytes",
    "optional_address_text",
    "time_text",
    "values_of",
]


@lru_cache(maxsize=4096)
def _checksummed(value: str) -> str:
    return to_checksum_address(value)


def address_text(value: str) -> str:
    """The EIP-55 form of a lowercase address (cached: tokens, recipients and contracts
    repeat across records); an empty string stays empty."""
    return _checksummed(value) if value else value


def optional_address_text(value: str | None) -> str | None:
    return address_text(value) if value is not None else None


def decimal_text(value: Decimal) -> str:
    """The plain decimal string of ``value``, without exponent or trailing zeros."""
    text = format(value.normalize(), "f")
    return text if text != "-0" else "0"


def time_text(value: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``: ``2026-11-22T10:00:00.123456Z``."""
    return value.isoformat().replace("+00:00", "Z")


def values_of(enum: type[StrEnum]) -> Any:
    """``Literal[...]`` of ``enum``'s values, for a field of a public shape: pydantic then
    accepts exactly those strings and JSON Schema lists them as an ``enum`` of strings.
    Declare the field's type under ``TYPE_CHECKING`` as ``str`` (mypy cannot read it)."""
    return Literal[tuple(member.value for member in enum)]


def document_bytes(doc: dict[str, Any]) -> bytes:
    """A committed document's bytes (docs/openapi.json, docs/asyncapi.json): sorted keys,
    two-space indents, a final newline, so that diffs stay stable."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
