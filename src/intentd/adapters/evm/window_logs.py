"""trigger-processing's reads of one intent's window over JSON-RPC: logs filtered at the node.

The poller reads every block in full and every ``Transfer`` log of the chain's tokens,
because it watches many addresses. One intent needs far less, and
:class:`IntentWindowReader` asks the node for only that, through the proven log reads
of ``adapters.evm.log_reads`` (each answer anchored at a block whose hash the caller has
read, so ``chain.evm.coverage.proven_logs`` can prove it whole; adaptive ranges; a
one-block refusal read from the block's receipts):

- :meth:`~IntentWindowReader.transfers_to`: the ``Transfer`` logs of the chain's tokens
  whose recipient topic is the intent's address (``eth_getLogs`` with topics
  ``[Transfer, None, recipient]``), over ranges of at most the chain's
  ``max_log_range`` blocks, several ranges per POST.
- :meth:`~IntentWindowReader.token_logs`: every ``Transfer`` log of the chain's tokens
  in the few blocks where such a log was found, the poller's own query restricted to
  one block. A deposit's identity counts its log among its transaction's ``Transfer``
  logs of the same token whatever their recipient (``chain.evm.decoding``), so it is
  decoded from these, never from the filtered answer: the identity is the poller's.
- :meth:`~IntentWindowReader.headers`: block headers without transactions.

Errors are the JSON-RPC client's (``adapters.evm.json_rpc``).
"""

from __future__ import annotations

from collections.abc import Sequence

from intentd.adapters.evm.json_rpc import JsonRpcClient
from intentd.adapters.evm.log_reads import RANGES_PER_POST, LogReader, recipient_topic
from intentd.chain.blocks import BlockHeader, BlockRange
from intentd.chain.evm.coverage import LogsAnswer
from intentd.chain.evm.decoding import decode_headers
from intentd.chain.evm.log_ranges import LogRangeSizer

__all__ = ["RANGES_PER_BATCH", "IntentWindowReader", "recipient_topic"]

RANGES_PER_BATCH = RANGES_PER_POST
"""``eth_getLogs`` ranges sent in one POST."""


class IntentWindowReader:
    """Narrow reads of one chain for trigger-processing; the caller closes the client."""

    def __init__(self, client: JsonRpcClient, tokens: Sequence[str], *, max_log_range: int):
        self._client = client
        self._any_token = bool(tokens)
        self._logs = LogReader(client, tokens, max_log_range=max_log_range)

    @property
    def log_ranges(self) -> LogRangeSizer:
        return self._logs.log_ranges

    async def transfers_to(self, recipient: str, blocks: BlockRange) -> list[LogsAnswer]:
        """``Transfer`` logs of the chain's tokens to ``recipient`` in ``blocks``, in
        order, anchored at ``blocks.last``."""
        if not self._any_token:
            return []
        return await self._logs.read([blocks], anchor=blocks.last, recipient=recipient)

    async def token_logs(self, numbers: Sequence[int], *, anchor: int) -> list[LogsAnswer]:
        """Every ``Transfer`` log of the chain's tokens in each block of ``numbers`` (one
        answer per block, in order), anchored at ``anchor``."""
        if not numbers:
            return []
        return await self._logs.read([BlockRange(n, n) for n in numbers], anchor=anchor)

    async def headers(self, numbers: Sequence[int]) -> dict[int, BlockHeader]:
        """The headers of the blocks ``numbers`` (which must exist)."""
        calls = [("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
        blocks = await self._client.batch(calls)
        return {
            n: decode_headers([block], BlockRange(n, n))[0]
            for n, block in zip(numbers, blocks, strict=True)
        }
