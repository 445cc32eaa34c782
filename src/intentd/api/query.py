"""One value per query parameter, unless the parameter is a list.

A query string may repeat a name (``amount=1&amount=2``); a framework that keeps the
last value would answer for a request the client did not mean. Every route depends on
:func:`single_valued_query`, so a repeated single-valued parameter is refused with a
422 problem (``repeated_parameter``) naming it.
"""

from __future__ import annotations

from fastapi import Request

from intentd.api.problems import ApiProblem

LIST_PARAMETERS = frozenset({"excludeChains", "type"})
"""The query parameters that take several values (given once per value)."""


async def single_valued_query(request: Request) -> None:
    """Refuse a request that gives a single-valued query parameter more than once."""
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name in seen and name not in LIST_PARAMETERS:
            raise ApiProblem(
                422,
                "repeated_parameter",
                f"query parameter {name!r} is given more than once; it takes one value",
                field=name,
            )
        seen.add(name)
