"""The trigger verifier's view of the chains' nodes (JSON-RPC).

One :class:`~intentd.adapters.evm.chain_reader.EvmChainReader` per chain, opened on first use
with a few attempts per read (a failed read only postpones a decision to the next
round), plus the transaction receipt lookup the verifier needs, asked together with
the node's block at the orphaned height (one POST, one node; no receipt decides nothing
by itself), and the balances and traces of its balance reconciliation
(``adapters.evm.state_reader``), on the same client. Failed reads are the
RPC errors of ``adapters.evm.chain_reader`` and the node's contradictory answers
(:class:`~intentd.chain.errors.InconsistentAnswer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from intentd.adapters.evm.chain_reader import EvmChainReader, open_chain
from intentd.adapters.evm.json_rpc import JsonRpcClient, MissingResult, RpcError, RpcTransportError
from intentd.adapters.evm.state_reader import EvmChainState
from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.ports import RawRange
from intentd.settings import ChainConfig

__all__ = ["EvmVerifierChains"]

_READ_ATTEMPTS = 3
_FAILED_READS = (RpcError, RpcTransportError, MissingResult, InconsistentAnswer)


class EvmDepositChain:
    """An :class:`EvmChainReader` and the receipt lookup of its client."""

    def __init__(self, client: JsonRpcClient, reader: EvmChainReader) -> None:
        self._client = client
        self._reader = reader

    async def latest_block(self) -> int:
        return await self._reader.latest_block()

    async def read_range(self, blocks: BlockRange) -> RawRange:
        return await self._reader.read_range(blocks)

    async def block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        return await self._reader.block_hashes(numbers)

    async def receipts(self, tx_hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
        return await self._reader.receipts(tx_hashes)

    async def receipt_at(self, tx_hash: str, number: int) -> tuple[str | None, Any]:
        block, receipt = await self._client.together(
            [
                ("eth_getBlockByNumber", [hex(number), False]),
                ("eth_getTransactionReceipt", [tx_hash]),
            ],
            allow_null=True,
        )
        return (str(block["hash"]).lower() if block is not None else None), receipt

    def state(self) -> EvmChainState:
        return EvmChainState(self._client)

    async def close(self) -> None:
        await self._reader.close()


class EvmVerifierChains:
    def __init__(self) -> None:
        self._open: dict[str, EvmDepositChain] = {}

    def reader(self, chain: ChainConfig) -> EvmDepositChain:
        found = self._open.get(chain.name)
        if found is None:
            client, reader = open_chain(chain, attempts=_READ_ATTEMPTS)
            found = self._open[chain.name] = EvmDepositChain(client, reader)
        return found

    def failed_read(self, exc: BaseException) -> bool:
        return isinstance(exc, _FAILED_READS)

    async def close(self) -> None:
        for chain in self._open.values():
            await chain.close()
        self._open.clear()
