"""``/api/v1/chains``, ``/api/v1/chains/all`` and ``/api/v1/chains/{chain}/tokens``:
where a client can be paid.

From configuration only (no I/O). A key sees the chains of the network classes it may
use (``api.credentials.allowed_networks``: a live key the main networks; a test key the
test networks, and in a test environment the main ones too), the rule of every other
route. A chain the key may not use is answered 404 like one that does not exist.
``/chains`` answers their names, the shape the Chainrails SDK's ``chains.getSupported``
reads (docs/api.md, "Chainrails SDK compatibility"); ``/chains/all`` their records.
Tokens are the records of ``GET /chains/tokens/all`` (``TokenRecord``; the native coin
is ``0xEeee…EEeE``, as in ``tokenIn``), so ``/chains/{chain}/tokens`` answers what
``/chains/tokens/all?chain=`` does for a chain the key may use.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response
from intentd.api.models import TokenRecord
from intentd.api.problems import ApiProblem
from intentd.api.render import token_json, tokens_of
from intentd.intents.chain_names import find_chain
from intentd.settings import NATIVE_TOKEN

__all__ = ["ChainList", "ChainRecord", "router"]

router = APIRouter(prefix=API_PREFIX, tags=["chains"])


class ChainRecord(BaseModel):
    name: str = Field(description="the name the API takes (source_chain, destination_chain)")
    chain_id: int
    network: Literal["main", "test"] = Field(description="the network class")
    native: TokenRecord = Field(description="the native coin")
    tokens: list[TokenRecord] = Field(description="the ERC-20 tokens accepted on this chain")


class ChainList(BaseModel):
    data: list[ChainRecord]


_NETWORKS = {"mainnet": "main", "testnet": "test", "main": "main", "test": "test"}


@router.get(
    "/chains",
    response_model=list[str],
    responses=errors(),
    summary="The names of the chains the key may use (the Chainrails SDK's getSupported)",
)
async def chain_names(
    request: Request,
    caller: ApiCaller,
    network: Annotated[
        Literal["mainnet", "testnet", "main", "test"] | None,
        Query(description="only this network class"),
    ] = None,
) -> Response:
    settings = Services.of(request).settings
    wanted = _NETWORKS[network] if network is not None else None
    return json_response(
        [
            name
            for name, chain in sorted(settings.chains.items())
            if caller.may_use(chain) and wanted in (None, chain.network)
        ]
    )


@router.get(
    "/chains/all",
    response_model=ChainList,
    responses=errors(),
    summary="The chains the key may use, with their native coin and tokens",
)
async def list_chains(request: Request, caller: ApiCaller) -> Response:
    settings = Services.of(request).settings
    chains = [c for _, c in sorted(settings.chains.items()) if caller.may_use(c)]
    return json_response(
        {
            "data": [
                {
                    "name": chain.name,
                    "chain_id": chain.chain_id,
                    "network": chain.network,
                    "native": token_json(chain, NATIVE_TOKEN, chain.native),
                    "tokens": [token_json(chain, t.address, t) for t in chain.tokens],
                }
                for chain in chains
            ]
        }
    )


@router.get(
    "/chains/{chain}/tokens",
    response_model=list[TokenRecord],
    responses={
        **errors(422),
        404: {**errors(404)[404], "description": "No such chain for this key"},
    },
    summary="The tokens accepted on one chain (its native coin first)",
)
async def chain_tokens(
    request: Request,
    caller: ApiCaller,
    chain: Annotated[
        str, Path(max_length=64, description="a chain name from GET /chains (ours or the SDK's)")
    ],
) -> Response:
    found = find_chain(Services.of(request).settings.chains, chain)
    if found is None or not caller.may_use(found):
        raise ApiProblem(404, "chain_not_found", f"no chain {chain!r} for this key")
    return json_response(tokens_of([found]))
