"""``/api/v1/quotes/...`` and ``/api/v1/chains/tokens/all``.

Quote amounts are in USD unless ``amountSymbol`` names another denomination (the
spec: "for a quote in USD, set it to USDC or leave it empty"). Lists leave out the routes
whose amount out the relayer's float cannot cover now; a single quote is refused (409
``insufficient_liquidity``); an unknown float is a 503 (``intents.admission``). A quote answers
the ``amount`` and ``amountSymbol`` it used; creating an intent with those and the
quote's chains and tokens gives the quote's figures.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from intentd.api.callers.security import ApiCaller, errors
from intentd.api.context import API_PREFIX, Services, json_response
from intentd.api.intents.routes import check_networks
from intentd.api.models import Quote, QuoteList, TokenRecord
from intentd.api.render import quote_json, tokens_of
from intentd.intents import quotes, routing
from intentd.intents.chain_names import name_set
from intentd.intents.validation import known_chain

__all__ = ["router"]

router = APIRouter(prefix=API_PREFIX, tags=["quotes and tokens"])

ChainParam = Annotated[str, Query(max_length=64, description="chain name, e.g. BASE_TESTNET")]
AddressParam = Annotated[str, Query(max_length=64, description="token address")]
AmountParam = Annotated[
    str, Query(max_length=100, description="decimal amount the recipient gets, e.g. 12.5")
]
SymbolParam = Annotated[
    str | None,
    Query(max_length=32, description="denomination of amount; USD (or USDC) when empty"),
]
ExcludeParam = Annotated[
    list[str] | None, Query(max_length=64, description="source chains to leave out")
]
USD = "USD"


@router.get(
    "/quotes/multi-source",
    response_model=QuoteList,
    responses=errors(403, 422, 503),
    summary="The best quote of every source chain and token for one destination",
)
async def multi_source(
    request: Request,
    *,
    caller: ApiCaller,
    destinationChain: ChainParam,  # noqa: N803 - the spec's parameter names
    amount: AmountParam,
    tokenOut: AddressParam,  # noqa: N803
    amountSymbol: SymbolParam = None,  # noqa: N803
    excludeChains: ExcludeParam = None,  # noqa: N803
) -> Response:
    services = Services.of(request)
    check_networks(services, caller, (destinationChain, "destinationChain"))
    symbol = amountSymbol or USD
    found = quotes.multi_source(
        services.settings,
        services.prices,
        destinationChain,
        tokenOut,
        amount,
        amount_symbol=symbol,
        source_allowed=caller.may_use,
        exclude=name_set(services.settings.chains, excludeChains or ()),
    )
    found = services.liquidity.covering(found)  # what the relayer can pay out there
    return json_response({"quotes": [_json(services, q, amount, symbol) for q in found]})


@router.get(
    "/quotes/single-source",
    response_model=Quote,
    responses=errors(403, 409, 422, 503),
    summary="The quote of one source chain and token (the cheapest bridge option)",
)
async def single_source(
    request: Request,
    *,
    caller: ApiCaller,
    sourceChain: ChainParam,  # noqa: N803
    tokenIn: AddressParam,  # noqa: N803
    destinationChain: ChainParam,  # noqa: N803
    amount: AmountParam,
    tokenOut: Annotated[str | None, Query(max_length=64)] = None,  # noqa: N803
    amountSymbol: SymbolParam = None,  # noqa: N803
    bridge: Annotated[str | None, Query(max_length=32)] = None,
) -> Response:
    services = Services.of(request)
    check_networks(
        services, caller, (sourceChain, "sourceChain"), (destinationChain, "destinationChain")
    )
    path = routing.route(services.settings, sourceChain, tokenIn, destinationChain, tokenOut)
    symbol = amountSymbol or USD
    found = quotes.quote(services.settings, services.prices, path, amount, symbol, bridge=bridge)
    services.liquidity.require(found)
    return json_response(_json(services, found, amount, symbol))


@router.get(
    "/quotes/bridge-options",
    response_model=QuoteList,
    responses=errors(403, 422, 503),
    summary="One quote per bridge option of a route, cheapest first",
)
async def bridge_options(
    request: Request,
    *,
    caller: ApiCaller,
    sourceChain: ChainParam,  # noqa: N803
    tokenIn: AddressParam,  # noqa: N803
    destinationChain: ChainParam,  # noqa: N803
    amount: AmountParam,
    tokenOut: Annotated[str | None, Query(max_length=64)] = None,  # noqa: N803
    amountSymbol: SymbolParam = None,  # noqa: N803
) -> Response:
    services = Services.of(request)
    check_networks(
        services, caller, (sourceChain, "sourceChain"), (destinationChain, "destinationChain")
    )
    path = routing.route(services.settings, sourceChain, tokenIn, destinationChain, tokenOut)
    symbol = amountSymbol or USD
    found = quotes.quotes_per_bridge(services.settings, services.prices, path, amount, symbol)
    found = services.liquidity.covering(found)
    return json_response({"quotes": [_json(services, q, amount, symbol) for q in found]})


def _json(services: Services, found: quotes.Quote, amount: str, symbol: str) -> dict[str, Any]:
    ttl = services.settings.pricing.quote_ttl
    return quote_json(found, amount, symbol, now=services.now(), ttl=ttl)


@router.get(
    "/chains/tokens/all",
    response_model=list[TokenRecord],
    responses=errors(403, 422),
    summary="Supported tokens retrieved successfully",
)
async def tokens(
    request: Request,
    caller: ApiCaller,
    chain: Annotated[str | None, Query(max_length=64, description="only this chain")] = None,
) -> Response:
    services = Services.of(request)
    chains = list(services.settings.chains.values())
    if chain is not None:
        config = known_chain(services.settings, chain, "chain")
        caller.require(config, "chain")
        chains = [config]
    return json_response(tokens_of(c for c in chains if caller.may_use(c)))
