"""The executor's JSON-RPC: fee inputs, gas estimates, nonces, broadcast, receipts.

Reads go through :class:`~intentd.adapters.evm.json_rpc.JsonRpcClient` with its retries
and failover. What the executor judges transactions by is asked with ``together``
(one POST to one URL, so one backend of a load balancer answers it all): a
:meth:`EvmChainWriter.view` (``eth_blockNumber``, counts at a block, receipts), and the
answer that proves who used a nonce (the counts before and at a block, the block with
its transactions, our receipts). The search for that block reads single counts at
block numbers at or below the depth block; any node that has the block answers them
alike, and a wrong one only fails the proof.

Broadcasts use a client of their own that does not retry: a node's refusal is an
answer to classify (:class:`SendOutcome`), and a broadcast that got no answer is
simply repeated on the next tick; re-sending the same signed bytes is harmless. The
answer types (:class:`~intentd.execution.ports.SendOutcome`, ``FeeInputs``,
``EstimateReverted``) belong to the ports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from intentd.adapters.evm.json_rpc import Call, JsonRpcClient, MissingResult, RpcError
from intentd.domain.actions import NATIVE
from intentd.execution.evidence import BlockTx, ChainView, NonceSearch, merge_views, prove_use
from intentd.execution.ports import Balances, EstimateReverted, FeeInputs, SendOutcome
from intentd.execution.tracking import NonceUse, Receipt

__all__ = ["EvmChainWriter", "classify_send_error"]


_KNOWN = re.compile(r"already known|known transaction|already imported|already exists", re.I)
_NONCE_LOW = re.compile(r"nonce too low|nonce has already been used|invalid nonce|old nonce", re.I)
_UNDERPRICED = re.compile(r"underpriced|fee too low|max fee per gas less than", re.I)
_FUNDS = re.compile(r"insufficient funds|lack of funds|out of gas: not enough", re.I)
_REVERT = re.compile(r"revert", re.I)
_BEHIND = re.compile(
    r"header not found|unknown block|block not found|block .{0,80} not found", re.I
)
"""A node's answer to a read at a block above its head."""
_PINNED_TRIES = 3
_BALANCE_OF = "0x70a08231"  # balanceOf(address)
_WORD = re.compile(r"0x[0-9a-fA-F]{1,64}")


def classify_send_error(message: str) -> SendOutcome:
    for pattern, outcome in (
        (_KNOWN, SendOutcome.KNOWN),
        (_NONCE_LOW, SendOutcome.NONCE_TOO_LOW),
        (_UNDERPRICED, SendOutcome.UNDERPRICED),
        (_FUNDS, SendOutcome.INSUFFICIENT_FUNDS),
    ):
        if pattern.search(message):
            return outcome
    return SendOutcome.REJECTED


class EvmChainWriter:
    """The executor's three chain ports over JSON-RPC:
    :class:`~intentd.execution.ports.NodeReader`,
    :class:`~intentd.execution.ports.FeeOracle` and
    :class:`~intentd.execution.ports.Broadcaster`."""

    def __init__(self, reads: JsonRpcClient, sends: JsonRpcClient) -> None:
        self._reads = reads
        self._sends = sends
        self._seen = 0

    @property
    def seen_head(self) -> int:
        """The highest head a node answered this writer (``NodeReader.seen_head``)."""
        return self._seen

    def _saw(self, head: int) -> int:
        self._seen = max(self._seen, head)
        return head

    async def close(self) -> None:
        await self._reads.close()
        await self._sends.close()

    async def head(self) -> int:
        return self._saw(int(await self._reads.call("eth_blockNumber", []), 16))

    async def fee_inputs(self) -> FeeInputs:
        block, tip = await self._reads.batch(
            [("eth_getBlockByNumber", ["latest", False]), ("eth_maxPriorityFeePerGas", [])]
        )
        return FeeInputs(
            head=self._saw(int(block["number"], 16)),
            base_fee=int(block.get("baseFeePerGas") or "0x0", 16),
            tip=int(tip, 16),
        )

    async def has_code(self, address: str) -> bool:
        """The code at ``address`` at the highest head seen (:meth:`_pinned`)."""
        code = await self._pinned(self._reads, "eth_getCode", address)
        return code not in ("0x", "0x0", "")

    async def estimate_gas(self, sender: str, to: str, value: int, data: bytes) -> int:
        """Gas at the highest head seen (:meth:`_pinned`): a node below it has old state
        (the tokens not yet there) and must not make the estimate revert."""
        call = {"from": sender, "to": to, "value": hex(value), "data": "0x" + data.hex()}
        try:
            return int(await self._pinned(self._sends, "eth_estimateGas", call), 16)
        except RpcError as exc:
            if exc.code == 3 or _REVERT.search(exc.message):
                raise EstimateReverted(exc.message) from None
            raise

    async def _pinned(self, client: JsonRpcClient, method: str, first: Any) -> Any:
        """``method(first, <the highest head seen>)`` with ``eth_blockNumber`` in one
        POST, answered by a node at or past that head. A node below it answers "header
        not found" (retried by the client, on the next URL) or shows its lower head; it
        is asked again, at most :data:`_PINNED_TRIES` times, then
        :class:`MissingResult` (the tick is retried)."""
        pin = self._seen or await self.head()
        for _ in range(_PINNED_TRIES):
            try:
                head, answer = await client.together(
                    [("eth_blockNumber", []), (method, [first, hex(pin)])]
                )
            except RpcError as exc:
                if exc.code == 3 or _REVERT.search(exc.message) or not _BEHIND.search(exc.message):
                    raise
                continue  # a node below the pin: ask again
            if self._saw(_quantity("eth_blockNumber", head)) >= pin:
                return answer
        raise MissingResult(f"{method}: no node at or past block {pin} answered")

    async def nonces(self, signers: Sequence[str], block: str) -> dict[str, int]:
        """Transaction counts of ``signers`` at ``block`` (``latest``, ``pending`` or a
        block number in hex)."""
        counts = await self._reads.batch(
            [("eth_getTransactionCount", [signer, block]) for signer in signers]
        )
        return {s: int(c, 16) for s, c in zip(signers, counts, strict=True)}

    @property
    def view_size(self) -> int:
        return self._reads.max_calls

    async def view(self, signers: Sequence[str], hashes: Sequence[str], block: int) -> ChainView:
        """One POST to one URL: the node's head, counts at ``block``, receipts. More
        receipts than one POST holds (a group with many replacements) go in several,
        each with the head and counts, merged on the safe side (``merge_views``)."""
        room = max(self._reads.max_calls - 1 - len(signers), 1)
        chunks = [hashes[i : i + room] for i in range(0, len(hashes), room)] or [[]]
        views = [await self._view(signers, chunk, block) for chunk in chunks]
        return views[0] if len(views) == 1 else merge_views(views)

    async def _view(self, signers: Sequence[str], hashes: Sequence[str], block: int) -> ChainView:
        calls: list[Call] = [("eth_blockNumber", [])]
        calls += [("eth_getTransactionCount", [s, hex(block)]) for s in signers]
        calls += [("eth_getTransactionReceipt", [h]) for h in hashes]
        answers = await self._reads.together(calls, allow_null=True)
        counts, receipts = answers[1 : 1 + len(signers)], answers[1 + len(signers) :]
        return ChainView(
            head=self._saw(_quantity("eth_blockNumber", answers[0])),
            nonces={
                s: _quantity("eth_getTransactionCount", c)
                for s, c in zip(signers, counts, strict=True)
            },
            receipts={h: _receipt(a) for h, a in zip(hashes, receipts, strict=True)},
        )

    async def nonce_use(
        self, signer: str, nonce: int, through: int, ours: Sequence[str]
    ) -> NonceUse | None:
        search = NonceSearch(nonce, through)
        while (probe := search.probe()) is not None:
            count = await self._reads.call("eth_getTransactionCount", [signer, hex(probe)])
            search.answer(probe, _quantity("eth_getTransactionCount", count))
        block = search.found
        if block is None:
            return None
        calls: list[Call] = [
            ("eth_getTransactionCount", [signer, hex(block - 1)]),
            ("eth_getTransactionCount", [signer, hex(block)]),
            ("eth_getBlockByNumber", [hex(block), True]),
        ]
        receipt_calls: list[Call] = [("eth_getTransactionReceipt", [h]) for h in ours]
        fits = len(calls) + len(receipt_calls) <= self._reads.max_calls
        before, after, found, *receipts = await self._reads.together(
            calls + receipt_calls if fits else calls, allow_null=True
        )
        if not fits:  # each receipt is checked against the block's hash (prove_use)
            receipts = await self._reads.batch(receipt_calls, allow_null=True)
        if found is None or _quantity("eth_getBlockByNumber", found.get("number")) != block:
            return None
        return prove_use(
            signer,
            nonce,
            block,
            before=_quantity("eth_getTransactionCount", before),
            after=_quantity("eth_getTransactionCount", after),
            block_hash=found.get("hash"),
            txs=_block_txs(found),
            receipts={h.lower(): _receipt(r) for h, r in zip(ours, receipts, strict=True)},
        )

    async def known(self, hashes: Sequence[str]) -> dict[str, bool]:
        """Whether the node knows each transaction (in its pool or in a block)."""
        answers = await self._reads.batch(
            [("eth_getTransactionByHash", [h]) for h in hashes], allow_null=True
        )
        return {h: a is not None for h, a in zip(hashes, answers, strict=True)}

    async def send_raw(self, raw: bytes) -> tuple[SendOutcome, str]:
        """Broadcast signed bytes; the outcome and the node's message. Raises only when
        no node answered (transport errors): the caller tries again later."""
        try:
            await self._sends.call("eth_sendRawTransaction", ["0x" + raw.hex()])
        except RpcError as exc:
            return classify_send_error(exc.message), exc.message
        return SendOutcome.ACCEPTED, ""

    async def balances(self, holdings: Sequence[tuple[str, str]]) -> Balances:
        """One POST: ``eth_blockNumber``, then each holder's ``eth_getBalance`` (native) or
        the token's ``balanceOf`` at ``latest`` (so at that head or newer)."""
        calls: list[Call] = [("eth_blockNumber", [])]
        for holder, token in holdings:
            if token == NATIVE:
                calls.append(("eth_getBalance", [holder, "latest"]))
            else:
                data = _BALANCE_OF + "00" * 12 + holder.lower().removeprefix("0x")
                calls.append(("eth_call", [{"to": token, "data": data}, "latest"]))
        head, *answers = await self._reads.together(calls)
        return Balances(
            block=self._saw(_quantity("eth_blockNumber", head)),
            amounts={
                (holder.lower(), token): _word(answer)
                for (holder, token), answer in zip(holdings, answers, strict=True)
            },
        )


def _word(answer: Any) -> int:
    """A quantity, or a 32-byte ABI word (``balanceOf``'s answer)."""
    if not isinstance(answer, str) or not _WORD.fullmatch(answer):
        raise MissingResult(f"a balance answered {answer!r}, not a quantity or one word")
    return int(answer, 16)


def _quantity(method: str, answer: Any) -> int:
    try:
        return int(answer, 16)
    except (TypeError, ValueError):
        raise MissingResult(f"{method} answered {answer!r}, not a quantity") from None


def _block_txs(block: dict[str, Any]) -> list[BlockTx]:
    """The transactions of a block read with ``eth_getBlockByNumber(n, true)``."""
    try:
        return [
            BlockTx(str(tx["from"]), _quantity("nonce", tx["nonce"]), str(tx["hash"]))
            for tx in block["transactions"]
        ]
    except (KeyError, TypeError) as exc:
        raise MissingResult(f"eth_getBlockByNumber: malformed transactions: {exc!r}") from None


def _receipt(answer: Any) -> Receipt | None:
    if answer is None or answer.get("blockNumber") is None:
        return None
    return Receipt(
        tx_hash=str(answer["transactionHash"]).lower(),
        block_number=int(answer["blockNumber"], 16),
        block_hash=str(answer["blockHash"]).lower(),
        succeeded=int(answer.get("status", "0x0"), 16) == 1,
        gas_used=int(answer["gasUsed"], 16),
        effective_gas_price=int(answer.get("effectiveGasPrice") or "0x0", 16),
        l1_fee=int(answer.get("l1Fee") or "0x0", 16),
    )
