"""A route: (source chain, ``tokenIn``) to (destination chain, ``tokenOut``), validated.

Pure. Guarantees: both chains are configured and both tokens supported on their chain;
``tokenOut`` is ``tokenIn``'s symbol (by default, the destination's token of that
symbol) or, from a stablecoin, another stablecoin (paid 1:1); both chains are of one
network class. Anything else is an :class:`~intentd.intents.validation.IntentRequestError`
(``unknown_chain``, ``unknown_token``, ``unsupported_route``).
"""

from __future__ import annotations

from dataclasses import dataclass

from intentd.intents.validation import IntentRequestError, Token, known_chain, supported_token
from intentd.settings import ChainConfig, Settings

__all__ = ["Route", "route"]


@dataclass(frozen=True, slots=True)
class Route:
    """A validated (source chain, ``tokenIn``) to (destination chain, ``tokenOut``)."""

    source: ChainConfig
    destination: ChainConfig
    token_in_address: str
    token_in: Token
    token_out_address: str
    token_out: Token


def route(
    settings: Settings,
    source_chain: str,
    token_in: str,
    destination_chain: str,
    token_out: str | None,
) -> Route:
    """Validate the chains and tokens of a route; ``token_out`` defaults to ``tokenIn``'s
    symbol on the destination chain."""
    source = known_chain(settings, source_chain, "source_chain")
    destination = known_chain(settings, destination_chain, "destination_chain")
    in_address, in_token = supported_token(source, token_in, "tokenIn")
    if token_out:
        out_address, out_token = supported_token(destination, token_out, "tokenOut")
    else:
        found = destination.token_by_symbol(in_token.symbol)
        if found is None:
            raise IntentRequestError(
                "unknown_token",
                "tokenOut",
                f"{destination.name} has no {in_token.symbol}; name tokenOut explicitly",
            )
        out_address, out_token = found[0].lower(), found[1]
    if out_token.symbol != in_token.symbol and not (
        in_token.category == "stablecoin" and out_token.category == "stablecoin"
    ):
        raise IntentRequestError(
            "unsupported_route",
            "tokenOut",
            f"{in_token.symbol} -> {out_token.symbol}: only the same token, or stablecoin to"
            " stablecoin, can be bridged",
        )
    if source.network != destination.network:
        raise IntentRequestError(
            "unsupported_route",
            "destination_chain",
            f"{source.name} is a {source.network} network and {destination.name} a"
            f" {destination.network} network; a route stays within one class",
        )
    return Route(source, destination, in_address, in_token, out_address, out_token)
