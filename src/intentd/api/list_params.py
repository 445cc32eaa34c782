"""``GET /api/v1/intents``'s query parameters, read into a filter or refused precisely.

Pure: no I/O. A chain filter names a configured chain (else 422 ``unknown_chain``)
that the caller's key may use (else 403 ``network_class_mismatch``, as on create);
``sender`` and ``recipient`` are EVM addresses (else 422 ``invalid_address``);
``metadata_key`` and ``metadata_value`` come together (else 422
``incomplete_metadata_filter``). Times are those of the event log (400
``invalid_time``). A cursor is opaque: one this route did not give out is 400
``invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import re

from intentd.adapters.intent_list import ListPosition
from intentd.api.auth import Caller
from intentd.api.problems import ApiProblem
from intentd.settings import Settings

__all__ = ["chain_filter", "decode_cursor", "encode_cursor", "metadata_filter"]

_CURSOR = re.compile(r"^i:(\d{1,19}):(\d{1,19})$")
_TEXT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INT64 = 2**63 - 1


def chain_filter(settings: Settings, caller: Caller, name: str | None, field: str) -> str | None:
    """``name`` if it is a chain the caller may see; None if absent."""
    if name is None:
        return None
    chain = settings.chains.get(name)
    if chain is None:
        known = ", ".join(sorted(settings.chains))
        raise ApiProblem(
            422, "unknown_chain", f"{field} {name!r} is not a chain; one of {known}", field=field
        )
    caller.require(chain, field)
    return name


def metadata_filter(key: str | None, value: str | None) -> tuple[str, str] | None:
    if key is None and value is None:
        return None
    if key is None or value is None:
        missing = "metadata_key" if key is None else "metadata_value"
        raise ApiProblem(
            422,
            "incomplete_metadata_filter",
            "metadata_key and metadata_value filter together; give both",
            field=missing,
        )
    return key, value


def encode_cursor(at: ListPosition) -> str:
    text = f"i:{at.created_tx}:{at.intent_id}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> ListPosition | None:
    if cursor is None:
        return None
    if not _TEXT.match(cursor):
        raise _bad_cursor()
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise _bad_cursor() from None
    match = _CURSOR.match(text)
    if match is None or max(int(match.group(1)), int(match.group(2))) > _INT64:
        raise _bad_cursor()
    return ListPosition(int(match.group(1)), int(match.group(2)))


def _bad_cursor() -> ApiProblem:
    return ApiProblem(
        400,
        "invalid_cursor",
        "cursor is not one this endpoint gave out (pass next_cursor back unchanged)",
        field="cursor",
    )
