"""Configured tokens against their contracts: ``decimals()`` and ``symbol()`` on chain.

A token's ``decimals`` turns every decimal amount of the API into base units; a wrong
one (6 configured for an 18-decimal token) quotes and prefills amounts off by powers
of ten. So the roles that turn amounts into base units or send tokens check, at start,
every token they use against its contract and refuse to start on any difference,
naming the key: the API and ``intents create`` and ``run`` (every chain), the executor
(its chain). Pollers and the lifecycle work in base units only and do not check.

Only a definite answer makes a difference (a :class:`~intentd.settings.ConfigError`):
no code at the token's address at a block the node has (the block pinned first, and
asked in one POST with ``eth_blockNumber``, which must be at or past it), or a
``decimals()`` / ``symbol()`` that answers otherwise or reverts at that block. A node
that gives no answer (a JSON-RPC error other than a revert, an HTTP error, a dropped
connection, a backend that lacks the block) says nothing about the contract: the check
asks again after a bounded, jittered backoff, for as long as it takes (``attempts``
bounds it for a one-shot command, which then raises the last error), logging the wait
as an outage of the chain's RPC (a first line, a summary every 30 s, the end). An RPC
URL that answers another chain is a configuration error too (``rpc_urls``).

:func:`token_mismatches` is the pure comparison; :func:`check_tokens` reads the
contracts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from intentd.adapters.evm.json_rpc import JsonRpcClient, RpcError, Transport, WrongChainError
from intentd.backoff import Backoff
from intentd.chain.errors import ChainUnavailable
from intentd.settings import ChainConfig, ConfigError, Settings
from intentd.supervision import rpc
from intentd.supervision.outage_log import OutageLog, describe, emit

__all__ = [
    "RETRY",
    "REVERTED",
    "TokenAnswer",
    "check_tokens",
    "decode_symbol",
    "decode_uint",
    "token_mismatches",
]


RETRY = Backoff(0.5, cap=30.0, jitter=0.5)
"""Pauses between two tries of a chain's check while its nodes give no answer."""
REVERTED = object()
"""The answer of a call that reverted (at a block the node has): a definite answer."""
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


@dataclass(frozen=True, slots=True)
class TokenAnswer:
    """What the chain says of one token, at one block the answering node has."""

    code: str
    """``eth_getCode`` of the token's address (``0x``: no contract there)."""
    decimals: object
    """``decimals()``'s raw result, or :data:`REVERTED`."""
    symbol: object
    """``symbol()``'s raw result, or :data:`REVERTED`."""


def token_mismatches(chain: ChainConfig, answers: Sequence[TokenAnswer]) -> list[str]:
    """One message per difference between ``chain.tokens`` and the contracts' answers
    (in the order of ``chain.tokens``)."""
    found = []
    for index, (token, answer) in enumerate(zip(chain.tokens, answers, strict=True)):
        key = f"chains.{chain.name}.tokens.{index}"
        if answer.code in ("0x", "0x0", ""):
            found.append(f"{key}.address = {token.address}: no contract there")
            continue
        decimals, symbol = decode_uint(answer.decimals), decode_symbol(answer.symbol)
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


class _NoAnswer(Exception):
    """The node answered from before the pinned block: ask again."""


async def check_tokens(
    settings: Settings,
    chains: Iterable[str],
    *,
    transport: Transport | None = None,
    retry: Backoff | None = None,
    attempts: int | None = None,
) -> None:
    """Read every configured token of ``chains``; ConfigError naming each difference.

    Waits out nodes that give no answer (see the module; ``retry``: the pauses, by
    default :data:`RETRY`); with ``attempts``, raises the last error after that many
    tries of a chain instead."""
    configs = [settings.chain(name) for name in chains]
    found = await asyncio.gather(
        *(_checked(chain, transport, retry or RETRY, attempts) for chain in configs),
        return_exceptions=True,
    )
    problems: list[str] = []
    for part in found:
        if isinstance(part, BaseException):
            raise part
        problems += part
    if problems:
        raise ConfigError("tokens differ from their contracts:\n  " + "\n  ".join(problems))


async def _checked(
    chain: ChainConfig, transport: Transport | None, retry: Backoff, attempts: int | None
) -> list[str]:
    """The differences of ``chain``, asked again until its nodes answer."""
    if not chain.tokens:
        return []
    outage = OutageLog(rpc(chain.name))
    client = JsonRpcClient(
        chain.name,
        chain.rpc_urls,
        transport=transport,
        timeout=chain.rpc_timeout,
        attempts=1,  # the retries are this loop's: an outage is told in a few lines
        chain_id=chain.chain_id,
    )
    try:
        tried = 0
        while True:
            tried += 1
            try:
                answers = await _answers(client, chain)
            except WrongChainError as exc:
                raise ConfigError(f"chains.{chain.name}.rpc_urls: {exc}") from exc
            except (ChainUnavailable, _NoAnswer) as exc:
                if attempts is not None and tried >= attempts:
                    raise
                emit(outage.failed(time.monotonic(), describe(exc), task="token check"))
                emit(outage.still(time.monotonic()))
                await asyncio.sleep(retry.delay(tried))
                continue
            emit(outage.answered(time.monotonic()))
            return token_mismatches(chain, answers)
    finally:
        await client.close()


async def _answers(client: JsonRpcClient, chain: ChainConfig) -> list[TokenAnswer]:
    """Each token's answers at one block, each from a node that has that block."""
    block = hex(int(await client.call("eth_blockNumber", []), 16))
    answers = []
    for token in chain.tokens:
        code = await _at(client, block, ("eth_getCode", [token.address, block]))
        decimals = await _at(client, block, _call(token.address, DECIMALS, block))
        symbol = await _at(client, block, _call(token.address, SYMBOL, block))
        answers.append(TokenAnswer(str(code), decimals, symbol))
    return answers


def _call(address: str, selector: str, block: str) -> tuple[str, list[object]]:
    return "eth_call", [{"to": address, "data": selector}, block]


async def _at(client: JsonRpcClient, block: str, call: tuple[str, list[object]]) -> object:
    """``call``'s result from a node at or past ``block`` (asked with its head, in one
    POST); :data:`REVERTED` if it reverted; raises if there is no answer."""
    try:
        head, result = await client.together([("eth_blockNumber", []), call], allow_null=True)
    except RpcError as exc:
        if exc.method == "eth_call" and _reverted(exc):
            return REVERTED
        raise
    if not isinstance(head, str) or int(head, 16) < int(block, 16):
        raise _NoAnswer(f"a node at block {head} answered for block {int(block, 16)}")
    if result is None:  # not an answer: a node that knows the block answers a value
        raise _NoAnswer(f"{call[0]} answered null at block {int(block, 16)}")
    return result


def _reverted(error: RpcError) -> bool:
    """Whether the node says the call reverted (EIP-1474 code 3, or geth's message)."""
    return error.code == 3 or "revert" in error.message.lower()
