"""Configured tokens against their contracts: ``decimals()`` and ``symbol()`` on chain.

A token's ``decimals`` turns every decimal amount of the API into base units; a wrong
one (6 configured for an 18-decimal token) quotes and prefills amounts off by powers
of ten. So the roles that turn amounts into base units or send tokens check, at start,
every token they use against its contract and refuse to start on any difference,
naming the key: the API and ``intents create`` and ``run`` (every chain), the executor
(its chain). Pollers and the lifecycle work in base units only and do not check.

:func:`token_mismatches` is the pure comparison; :func:`check_tokens` reads the
contracts (the chain id checked first by the client; a call that reverts counts as
no answer, so the message names the token's key).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import TypeVar

from intentd.adapters.json_rpc import JsonRpcClient, RpcError, Transport
from intentd.settings import ChainConfig, ConfigError, Settings

__all__ = ["check_tokens", "decode_symbol", "decode_uint", "token_mismatches"]

_T = TypeVar("_T")
DECIMALS = "0x313ce567"
"""Selector of ``decimals()``."""
SYMBOL = "0x95d89b41"
"""Selector of ``symbol()``."""


def decode_uint(answer: object) -> int | None:
    """A ``uint`` return value, or None if the answer is not one (no contract there)."""
    if not isinstance(answer, str) or len(answer) != 66:
        return None
    try:
        return int(answer, 16)
    except ValueError:
        return None


def decode_symbol(answer: object) -> str | None:
    """A ``string`` return value (or the ``bytes32`` some old tokens return), or None."""
    if not isinstance(answer, str) or not answer.startswith("0x"):
        return None
    try:
        data = bytes.fromhex(answer[2:])
    except ValueError:
        return None
    if len(data) == 32:  # bytes32, right-padded with zeros
        return data.rstrip(b"\x00").decode("utf-8", errors="replace")
    if len(data) < 64:
        return None
    offset = int.from_bytes(data[:32], "big")
    if offset + 32 > len(data):
        return None
    length = int.from_bytes(data[offset : offset + 32], "big")
    text = data[offset + 32 : offset + 32 + length]
    if len(text) != length:
        return None
    return text.decode("utf-8", errors="replace")


def token_mismatches(chain: ChainConfig, answers: Sequence[tuple[object, object]]) -> list[str]:
    """One message per difference between ``chain.tokens`` and the contracts' answers
    (``(decimals(), symbol())`` raw results, in the order of ``chain.tokens``)."""
    found = []
    for index, (token, (raw_decimals, raw_symbol)) in enumerate(
        zip(chain.tokens, answers, strict=True)
    ):
        key = f"chains.{chain.name}.tokens.{index}"
        decimals, symbol = decode_uint(raw_decimals), decode_symbol(raw_symbol)
        if decimals is None:
            found.append(
                f"{key}.address = {token.address}: no ERC-20 contract answers decimals() there"
            )
            continue
        if decimals != token.decimals:
            found.append(
                f"{key}.decimals = {token.decimals}: the contract at {token.address} has"
                f" {decimals} decimals"
            )
        if symbol != token.symbol:
            found.append(
                f"{key}.symbol = {token.symbol!r}: the contract at {token.address} says {symbol!r}"
            )
    return found


async def check_tokens(
    settings: Settings, chains: Iterable[str], *, transport: Transport | None = None
) -> None:
    """Read every configured token of ``chains``; ConfigError naming each difference."""
    configs = [settings.chain(name) for name in chains]
    found = await asyncio.gather(
        *(_chain_mismatches(chain, transport) for chain in configs), return_exceptions=True
    )
    problems = [problem for part in _all_or_raise(found) for problem in part]
    if problems:
        raise ConfigError("tokens differ from their contracts:\n  " + "\n  ".join(problems))


async def _chain_mismatches(chain: ChainConfig, transport: Transport | None) -> list[str]:
    if not chain.tokens:
        return []
    client = JsonRpcClient(
        chain.name,
        chain.rpc_urls,
        transport=transport,
        timeout=chain.rpc_timeout,
        attempts=3,
        chain_id=chain.chain_id,
    )
    try:
        results = _all_or_raise(
            await asyncio.gather(
                *(
                    _read(client, token.address, selector)
                    for token in chain.tokens
                    for selector in (DECIMALS, SYMBOL)
                ),
                return_exceptions=True,  # every call ends before the client closes
            )
        )
    finally:
        await client.close()
    pairs = [(results[i], results[i + 1]) for i in range(0, len(results), 2)]
    return token_mismatches(chain, pairs)


def _all_or_raise(results: Sequence[_T | BaseException]) -> list[_T]:
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [result for result in results if not isinstance(result, BaseException)]


async def _read(client: JsonRpcClient, address: str, selector: str) -> object:
    """The call's raw result; None if the contract refuses it (a revert is an answer)."""
    try:
        return await client.call(
            "eth_call", [{"to": address, "data": selector}, "latest"], allow_null=True
        )
    except RpcError:
        return None
