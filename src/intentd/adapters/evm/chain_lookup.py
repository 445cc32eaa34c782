"""Point reads of chain state over JSON-RPC: block timestamps and balances.

Used by trigger-processing (``intentd.scanning.trigger``, through
``adapters.evm.scan_chains``); the block scanning itself goes through the poller's
:class:`~intentd.adapters.evm.chain_reader.EvmChainReader`.
"""

from __future__ import annotations

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.settings import NATIVE_TOKEN

__all__ = ["BALANCE_OF", "balance", "block_timestamp"]

BALANCE_OF = "0x70a08231"
"""Selector of ``balanceOf(address)``."""


async def block_timestamp(client: JsonRpcClient, number: int) -> int:
    block = await client.call("eth_getBlockByNumber", [hex(number), False])
    return int(block["timestamp"], 16)


async def balance(client: JsonRpcClient, token: str, holder: str, block: int) -> int:
    """``holder``'s balance of ``token`` (the native coin for ``NATIVE_TOKEN``) at ``block``."""
    tag = hex(block)
    if token.lower() == NATIVE_TOKEN.lower():
        return int(await client.call("eth_getBalance", [holder, tag]), 16)
    data = BALANCE_OF + holder.lower().removeprefix("0x").rjust(64, "0")
    answer = await client.call("eth_call", [{"to": token, "data": data}, tag])
    return int(answer, 16) if answer not in ("0x", "") else 0
