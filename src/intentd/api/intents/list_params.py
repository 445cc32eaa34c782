"""``GET /api/v1/intents``'s query parameters, read into a filter or refused precisely.

Pure: no I/O. A chain filter names a configured chain (else 422 ``unknown_chain``)
that the caller's key may use (else 403 ``network_class_mismatch``, as on create);
``sender`` and ``recipient`` are EVM addresses (else 422 ``invalid_address``);
``metadata_key`` and ``metadata_value`` come together (else 422
``incomplete_metadata_filter``). Times and cursors are those of every list
(:mod:`intentd.api.paging`).
"""

from __future__ import annotations

from intentd.adapters.postgres.intent_list import ListPosition
from intentd.api.callers.auth import Caller
from intentd.api.paging import decode_cursor, encode_cursor
from intentd.api.problems import ApiProblem
from intentd.intents.chain_names import find_chain
from intentd.settings import Settings

__all__ = ["chain_filter", "decode_list_cursor", "encode_list_cursor", "metadata_filter"]


def chain_filter(settings: Settings, caller: Caller, name: str | None, field: str) -> str | None:
    """``name`` if it is a chain the caller may see; None if absent."""
    if name is None:
        return None
    chain = find_chain(settings.chains, name)
    if chain is None:
        known = ", ".join(sorted(settings.chains))
        raise ApiProblem(
            422, "unknown_chain", f"{field} {name!r} is not a chain; one of {known}", field=field
        )
    caller.require(chain, field)
    return chain.name


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


def encode_list_cursor(at: ListPosition) -> str:
    return encode_cursor("i", at.created_tx, at.intent_id)


def decode_list_cursor(cursor: str | None) -> ListPosition | None:
    if cursor is None:
        return None
    created_tx, intent_id = decode_cursor("i", cursor, 2)
    return ListPosition(created_tx, intent_id)
