"""Finding reconciled deposits in a batch of blocks: the reads around ``chain.evm.balances``.

:class:`Reconciliation` is used by the poller (for every open native-coin intent of
its chain) and by trigger-processing (for the one intent it scans); both get the same
deposits, with the same ids and amounts, for the same blocks.

Per batch, for the reconciled addresses whose window overlaps the batch:

1. their balances before the batch (the parent of its first block) and after it (its
   last block), one JSON-RPC batch; the balance after the previous batch is reused
   when the new one extends it;
2. at the same time, the receipts of the batch's top-level transactions to (with
   value) or from those addresses, one JSON-RPC batch (none when there are none);
3. only for an address whose balance change the transactions do not explain in full:
   its balance after each block of the batch, one JSON-RPC batch, and a deposit for
   each block with an unexplained increase;
4. with ``by_transaction`` (the chain's ``reconciled_identity = "transaction"``), only
   for the blocks where such a deposit was found: the node's trace of each
   (``debug_traceBlockByHash``, one JSON-RPC batch), which splits each deposit by the
   transactions that paid it and identifies it by them
   (:mod:`intentd.chain.evm.reconciled_ids`), so a reorg that moves them keeps it.

Every balance is read at a block *hash* (EIP-1898), so it belongs to the blocks the
batch decoded; a receipt from another block raises
:class:`~intentd.chain.errors.InconsistentAnswer`. The node must serve state at
those blocks (an archive node, or a batch within the node's state window).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import structlog

from intentd import observability as metrics
from intentd.chain.blocks import BlockHeader
from intentd.chain.evm.balances import (
    Movement,
    Reconciled,
    explained,
    movements,
    reconciled_deposits,
    unexplained,
)
from intentd.chain.evm.ports import StateReader
from intentd.chain.evm.reconciled_ids import by_transaction, traced_changes
from intentd.chain.transfers import ChainTransfer

__all__ = ["OpenNativeIntents", "Reconciliation"]

log = structlog.get_logger()


class OpenNativeIntents(Protocol):
    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        """Native-coin intents of the chain whose window meets ``first_time..last_time``."""
        ...


class Reconciliation:
    """Reconciled deposits to native-coin intent addresses, one batch at a time.

    Keeps the balances after the last batch (to read one balance per address, not two,
    while following the head); nothing else, so a restart or a rewind costs one read.
    """

    def __init__(
        self,
        chain: str,
        state: StateReader,
        intents: OpenNativeIntents | None = None,
        *,
        by_transaction: bool = True,
    ) -> None:
        self._chain = chain
        self._state = state
        self._intents = intents
        self._by_transaction = by_transaction
        self._after: dict[str, tuple[str, int]] = {}  # address -> (block hash, balance)

    async def find(
        self,
        headers: Sequence[BlockHeader],
        blocks: Sequence[Mapping[str, Any]],
        reconciled: Sequence[Reconciled] | None = None,
    ) -> list[ChainTransfer]:
        """Reconciled deposits in ``blocks`` (full, decoded into ``headers``), chain order.

        ``reconciled``: the addresses to reconcile; by default the open native-coin
        intents of the chain (the ``intents`` source given at construction).
        """
        if not headers:
            return []
        own_source = reconciled is None
        if reconciled is None:
            if self._intents is None:
                raise ValueError("no reconciled addresses and no source of them")
            reconciled = await self._intents.reconciled(headers[0].timestamp, headers[-1].timestamp)
        targets = {r.address: r for r in reconciled if r.overlaps(headers)}
        if own_source:
            metrics.RECONCILED_ADDRESSES.labels(self._chain).set(len(targets))
        if not targets:
            self._after.clear()
            return []
        (before, after), explained = await asyncio.gather(
            self._edges(headers, sorted(targets)), self._explained(headers, blocks, targets)
        )
        self._after = {a: (headers[-1].hash, after[a]) for a in targets}
        totals = {
            a: {n: sum(by_tx.values()) for n, by_tx in explained.get(a, {}).items()}
            for a in targets
        }
        remainder = {
            a: unexplained(before[a], after[a], sum(totals[a].values())) for a in sorted(targets)
        }
        short = [a for a, amount in remainder.items() if amount != 0]
        if not short:
            return []
        inner = headers[:-1]
        answers = await self._state.balances([(a, h.hash) for a in short for h in inner])
        found: list[ChainTransfer] = []
        for n, address in enumerate(short):
            per_block = answers[n * len(inner) : (n + 1) * len(inner)]
            balances = [before[address], *per_block, after[address]]
            deposits = reconciled_deposits(targets[address], headers, balances, totals[address])
            found.extend(deposits)
            if remainder[address] < 0:
                metrics.RECONCILIATION.labels(self._chain, "unexplained_decrease").inc()
                log.warning(
                    "an intent address lost more than its transactions explain"
                    " (a fee the receipts do not show?)",
                    address=address,
                    blocks=f"{headers[0].number}..{headers[-1].number}",
                    unexplained=str(remainder[address]),
                )
        if found and self._by_transaction:
            found = await self._identified(found, blocks, explained)
        if found:
            metrics.RECONCILIATION.labels(self._chain, "reconciled_deposit").inc(len(found))
            log.info(
                "deposits found by balance reconciliation",
                deposits=[f"{d.to_address}@{d.block_number}:{d.amount}" for d in found],
            )
        found.sort(key=lambda d: (d.block_number, d.tx_index, d.to_address))
        return found

    async def _identified(
        self,
        found: Sequence[ChainTransfer],
        blocks: Sequence[Mapping[str, Any]],
        explained: Mapping[str, Mapping[int, Mapping[str, int]]],
    ) -> list[ChainTransfer]:
        """``found`` (identified by their blocks) split and identified by the transactions
        that paid them, as far as the blocks' traces account for them."""
        hashes = sorted({d.block_hash for d in found})
        traces = dict(zip(hashes, await self._state.traces(hashes), strict=True))
        by_number = {int(b["number"], 16): b for b in blocks}
        identified: list[ChainTransfer] = []
        for deposit in found:
            transactions = by_number[deposit.block_number]["transactions"]
            trace = traces[deposit.block_hash]
            changes = (
                None if trace is None else traced_changes(trace, transactions, deposit.to_address)
            )
            paid = explained.get(deposit.to_address, {}).get(deposit.block_number, {})
            split = None if changes is None else by_transaction(deposit, changes, paid)
            if split is None:
                metrics.RECONCILIATION.labels(self._chain, "untraced").inc()
                log.warning(
                    "the block's transactions do not account for a reconciled deposit;"
                    " it is identified by its block (a reorg that moves it retracts it)",
                    address=deposit.to_address,
                    block_number=deposit.block_number,
                    amount=str(deposit.amount),
                    traced=changes is not None,
                )
                identified.append(deposit)
            else:
                identified.extend(split)
        return identified

    async def _edges(
        self, headers: Sequence[BlockHeader], addresses: Sequence[str]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """Balances before the first block and after the last one, by address."""
        parent = headers[0].parent_hash
        before: dict[str, int] = {}
        queries = []
        for address in addresses:
            known = self._after.get(address)
            if known is not None and known[0] == parent:
                before[address] = known[1]
            elif headers[0].number == 0:
                before[address] = 0  # nothing exists before the genesis block
            else:
                queries.append((address, parent))
        queries.extend((address, headers[-1].hash) for address in addresses)
        answers = await self._state.balances(queries)
        missing = len(queries) - len(addresses)
        for (address, _), balance in zip(queries[:missing], answers[:missing], strict=True):
            before[address] = balance
        after = dict(zip(addresses, answers[missing:], strict=True))
        return before, after

    async def _explained(
        self,
        headers: Sequence[BlockHeader],
        blocks: Sequence[Mapping[str, Any]],
        targets: Mapping[str, Reconciled],
    ) -> dict[str, dict[int, dict[str, int]]]:
        """What top-level transactions explain, by address, block number and transaction."""
        moved: list[Movement] = movements(blocks, targets.keys())
        if not moved:
            return {}
        hashes = sorted({m.tx_hash for m in moved})
        receipts = dict(zip(hashes, await self._state.receipts(hashes), strict=True))
        return explained(moved, receipts, {h.number: h.hash for h in headers})
