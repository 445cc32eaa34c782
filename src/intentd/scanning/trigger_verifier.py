"""Reorg safety of deposits recorded by trigger-processing, with or without a poller.

The poller retracts only deposits it published (``published_deposits``);
trigger-processing records deposits from the API, on test networks with no poller at
all. Each deposit it records is remembered (``uow.watches.watch``, in the same
transaction as the deposit) and watched here, in the lifecycle process, until its
block is final (``final_depth`` blocks below the head; the role gives it the poller's
window, 256):

- the node still has the recorded block: look again next round (or stop, once final);
- the node has no block at that height (it lags, or the new branch is shorter): look
  again next round; only another block at that height counts as a reorg;
- it has another one (a reorg orphaned it), and the transaction is now in another block at
  confirmation depth, succeeded (receipt status 1) and makes the same transfer (same
  identity, token, recipient and amount): it is credited again as the poller's deposit
  would be (:func:`~intentd.lifecycle.crediting.credit`, through
  ``scanning.service``), so the lifecycle relocates
  the record to that block (still credited once; no event; actions held for it are
  released);
- it is in a newer block not yet at confirmation depth, or the node's answers disagree
  with each other (the receipt is asked together with the node's block at the
  recorded height, one request to one node: a node that lacks that block, or still has
  the recorded one, is not asked to prove a transfer gone): look again next round;
- the node has no receipt of the transaction: that is no evidence (a receipt index can
  trail the blocks, behind a load balancer or after a failover). The new branch's blocks
  from the orphaned height (at most the chain's ``batch_size``, up to the confirmed
  head) are read in full and scanned as the poller scans them
  (:func:`~intentd.scanning.service.scan_blocks`), with its balance
  reconciliation for ETH that arrived through a contract (whose synthetic id has no
  receipt): the same deposit found there is moved; its transaction found there without
  it (the logs answer was short), or an orphaned height above the confirmed head: look
  again next round;
- the receipt is there but the scan of its block does not find the transfer while the
  receipt's own logs show it (a node whose ``eth_getLogs`` stops below that block):
  look again next round;
- otherwise the transfer is gone (the receipt says it failed, or the transfer is in
  neither): a :class:`~intentd.domain.deposits.Retraction` is
  applied exactly as the poller's would be
  (:func:`~intentd.lifecycle.retractions.retract`: un-credited while nothing
  irreversible happened, an operator alert otherwise), the intent's trigger scan is
  rewound to the orphaned height (so the next trigger-processing call reads the new
  branch), and the deposit is no longer watched. All three in one transaction.

Every step is idempotent and guarded by the recorded block hash, so two lifecycle
replicas, or a poller that also published the deposit, change nothing twice. A chain
whose node or database fails (``VerifierChains.failed_read``, ``Store.classify`` of
:mod:`intentd.lifecycle.ports`) is skipped for the round (reported to the process's
health as part of that dependency's outage, ``supervision.report``; any other error is
logged with its traceback and counted as ``outcome="error"``): nothing is decided on
a failed read, and nothing here stops the lifecycle role.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime

import structlog

from intentd import observability as metrics
from intentd import wire
from intentd.chain.blocks import BlockRange, confirmed_head
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.balances import Reconciled, is_reconciled
from intentd.chain.evm.finality import Verdict, find_again, judge, shows_transfer
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.chain.transfers import ChainTransfer
from intentd.domain.deposits import Deposit, Disposition, RecordedDeposit, Retraction
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.failures import Failure
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.ports import DepositChain, Store, VerifierChains
from intentd.lifecycle.retractions import retract
from intentd.scanning.service import ScanCredits, Scanned, scan_blocks
from intentd.settings import ChainConfig, Settings
from intentd.supervision import POSTGRESQL, answered, progress, report, rpc
from intentd.wait import wait_any

__all__ = ["TriggerVerifier"]

log = structlog.get_logger()


class TriggerVerifier:
    """Watches trigger-credited deposits of every configured chain; :meth:`close` it."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        chains: VerifierChains,
        *,
        book: ChainBook,
        final_depth: int,
        interval: float = 2.0,
        batch: int = 500,
    ) -> None:
        self._settings = settings
        self._book = book
        self._credits = ScanCredits(settings, store, book=book)
        self._store = store
        self._chains = chains
        self._final_depth = final_depth
        self._interval = interval
        self._batch = batch

    async def close(self) -> None:
        await self._chains.close()

    async def run(self, stop: asyncio.Event) -> None:
        """Check every chain each ``interval`` seconds until ``stop``."""
        while not stop.is_set():
            for chain in self._settings.chains:
                try:
                    await self.check(chain)
                except Exception as exc:
                    # A task beside the consumer: whatever fails here must not stop the role.
                    if self._chains.failed_read(exc):
                        report(rpc(chain), exc)  # part of the RPC's outage, not a line a round
                    elif self._store.classify(exc) is Failure.UNAVAILABLE:
                        report(POSTGRESQL, exc)
                    else:
                        metrics.TRIGGER_DEPOSIT_CHECKS.labels(chain, "error").inc()
                        log.exception("trigger deposits check failed", chain=chain)
                else:
                    answered(rpc(chain))  # the end of its outage, if one was reported
            progress()
            await wait_any(stop, within=self._interval)

    async def check(self, chain: str) -> dict[str, int]:
        """One round for ``chain``: how many watched deposits ended how (empty if none)."""
        async with self._store.unit() as uow:
            watched = await uow.watches.watched(chain, limit=self._batch)
        if not watched:
            return {}
        config = self._settings.chains[chain]
        reader = self._chains.reader(config)
        latest = await reader.latest_block()
        canonical = await reader.block_hashes(sorted({w.deposit.block_number for w in watched}))
        counts: Counter[str] = Counter()
        for recorded in watched:
            deposit = recorded.deposit
            if recorded.disposition is Disposition.RETRACTED:  # by the poller
                await self._settle(recorded, "gone")
                counts["gone"] += 1
                continue
            verdict = judge(
                deposit.block_hash,
                canonical[deposit.block_number],
                block_number=deposit.block_number,
                latest=latest,
                final_depth=self._final_depth,
            )
            if verdict is Verdict.FINAL:
                await self._settle(recorded, verdict.value)
            if verdict is not Verdict.ORPHANED:
                counts[verdict.value] += 1
                continue
            counts[await self._orphaned(config, reader, recorded, latest)] += 1
        for outcome, count in counts.items():
            metrics.TRIGGER_DEPOSIT_CHECKS.labels(chain, outcome).inc(count)
        return dict(counts)

    async def _orphaned(
        self,
        config: ChainConfig,
        reader: DepositChain,
        recorded: RecordedDeposit,
        latest: int,
    ) -> str:
        """Move, wait for, or retract a deposit whose recorded block was orphaned."""
        deposit = recorded.deposit
        seen, receipt = await reader.receipt_at(deposit.tx_hash, deposit.block_number)
        if seen is None or seen == deposit.block_hash:
            return "waiting"  # this node lags, or still has the block: it proves nothing gone
        if receipt is None:  # a receipt index can trail the blocks: no evidence yet
            return await self._look_for(config, reader, recorded, latest)
        if receipt.get("status") != "0x1":  # mined again, and failed: nothing arrived
            return await self._retract(config, recorded)
        number = int(receipt["blockNumber"], 16)
        if number > confirmed_head(latest, config.confirmations):
            return "waiting"  # mined again, not yet at confirmation depth
        scanned = await self._scan(config, reader, deposit, BlockRange(number, number))
        if scanned.headers[0].hash != str(receipt["blockHash"]).lower():
            return "waiting"  # the node reorganised between the two reads
        again = find_again(scanned.transfers, deposit)
        if again is not None:
            return await self._move(config, recorded, again)
        if shows_transfer(receipt, deposit):
            return "waiting"  # the receipt pays it: the node's logs answer was short
        return await self._retract(config, recorded)

    async def _look_for(
        self,
        config: ChainConfig,
        reader: DepositChain,
        recorded: RecordedDeposit,
        latest: int,
    ) -> str:
        """No receipt: look for the transfer in the new branch's blocks from the orphaned
        height, read in full (at most ``batch_size`` of them, up to the confirmed head).
        Found: moved; its transaction there without the transfer found (an index that
        trails): waiting; neither: retracted. A reconciled deposit is looked for by the
        same balance reconciliation that found it."""
        deposit = recorded.deposit
        last = min(
            confirmed_head(latest, config.confirmations),
            deposit.block_number + config.batch_size - 1,
        )
        if last < deposit.block_number:
            return "waiting"  # the new branch is not confirmed that high yet
        blocks = BlockRange(deposit.block_number, last)
        scanned = await self._scan(config, reader, deposit, blocks)
        again = find_again(scanned.transfers, deposit)
        if again is not None:
            return await self._move(config, recorded, again)
        if any(
            str(tx.get("hash", "")).lower() == deposit.tx_hash
            for block in scanned.raw.blocks
            for tx in block["transactions"]
        ):
            return "waiting"
        return await self._retract(config, recorded)

    async def _scan(
        self,
        config: ChainConfig,
        reader: DepositChain,
        deposit: Deposit,
        blocks: BlockRange,
    ) -> Scanned:
        """``blocks`` as read, and the deposits to ``deposit``'s address in them as the
        poller finds them (with its balance reconciliation, for a reconciled deposit)."""
        reconciliation, reconciled = None, None
        if is_reconciled(deposit.token, deposit.from_address):
            reconciliation = Reconciliation(
                config.name,
                reader.state(),
                by_transaction=config.reconciled_identity == "transaction",
            )
            reconciled = [Reconciled(deposit.to_address, 0, 2**62)]  # only its address
        return await scan_blocks(
            config, reader, blocks, WatchedAddresses([deposit.to_address]),
            reconciliation=reconciliation, reconciled=reconciled,
        )  # fmt: skip

    async def _move(
        self, config: ChainConfig, recorded: RecordedDeposit, again: ChainTransfer
    ) -> str:
        """Credit the re-mined transfer as the poller's would be: it is relocated."""
        deposit = recorded.deposit
        outcome = await self._credits.credit_one(
            wire.found_deposit(config.name, again), now=datetime.now(UTC)
        )
        if outcome is Outcome.RELOCATED:
            log.warning(
                "reorg moved a trigger-credited deposit to another block",
                deposit=recorded.id,
                tx_hash=deposit.tx_hash,
                orphaned_block=deposit.block_number,
                block=again.block_number,
            )
            return "moved"
        return "changed" if outcome is Outcome.DUPLICATE else outcome.value

    async def _retract(self, config: ChainConfig, recorded: RecordedDeposit) -> str:
        deposit = recorded.deposit
        retraction = Retraction(
            chain=config.name,
            tx_hash=deposit.tx_hash,
            log_index=deposit.log_index,
            block_number=deposit.block_number,
            block_hash=deposit.block_hash,
            to_address=deposit.to_address,
            token=deposit.token,
            transfer_index=deposit.transfer_index,
        )
        async with self._store.unit() as uow, uow.transaction():
            outcome = await retract(uow, self._book, retraction, now=datetime.now(UTC))
            if outcome in (Outcome.RETRACTED, Outcome.RETRACTION_ALERT):
                await uow.watches.settle(recorded.id, outcome.value)
                if recorded.intent_id is not None:
                    await uow.watches.rewind_scan(recorded.intent_id, deposit.block_number)
        log.warning(
            "reorg removed a trigger-credited deposit",
            deposit=str(recorded.key),
            outcome=outcome.value,
        )
        return outcome.value

    async def _settle(self, recorded: RecordedDeposit, outcome: str) -> None:
        async with self._store.unit() as uow:
            await uow.watches.settle(recorded.id, outcome)
