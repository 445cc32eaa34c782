"""The executor of one chain: ready actions in, transactions out, results to the outbox.

A thin loop over the ports of ``execution.ports`` (the chain's nodes as three
capability ports: state, fees, broadcasts; the store as a unit of work with the
repositories of ``execution.repositories``); the steps live in
``execution.starting`` (new work), ``execution.sending`` (record, then broadcast),
``execution.settling`` (receipts and verdicts) and ``execution.unsticking``
(re-broadcast or replace), the decisions in pure modules (``tx_plans``, ``gas``,
``tracking``, ``replacement``, ``policy``). Guarantees (see ``docs/execution.md``):

- A transaction is signed and recorded (nonce allocated, action ``submitted``) in
  one database transaction *before* it is broadcast. A crash before the broadcast
  leaves a ``signed`` row that the next tick (or the next process) broadcasts; a
  crash after it leaves a ``signed`` row whose bytes the node already has:
  re-sending them is harmless. New transactions are signed only for new work.
- Each tick judges every open nonce group from one node's view (head, count at the
  depth block, receipts, in one request); a group is final at the chain's
  confirmation depth. A nonce used by another transaction is decided only on proof
  (that transaction found in a block), never on an absent receipt. A stuck
  transaction is re-broadcast if the node forgot it, or else replaced by one with the
  same nonce and higher fees; whichever of them is mined wins, the others are dropped.
- Results (``sent`` once per action, then ``confirmed`` or ``failed``) go through the
  outbox in the transaction of the change they report.
- A prefill whose intent's deposits are above the source token's ``verify_above`` is
  signed only once a second provider confirms each of them; until then it stays
  ``ready``, unsigned, postponed with backoff (``execution.deposit_verifier``).
- A native sweep on an ``op_stack`` chain leaves the oracle's L1 data fee bound plus
  ``l1_fee_margin_bps`` at the address, in its first transfer and in each replacement
  (``execution.transfer_planner``); without a bound it is not signed and waits
  (``adapters.evm.l1_fee``).
- A prefill is signed only when the relayer can pay it on top of its prefills in
  flight; short, it waits up to ``liquidity.prefill_wait`` for a refill, then fails
  (``execution.prefill_funds``). Every ``liquidity.read_interval`` the tick ends with the
  relayer's float read and stored for the API and the metrics (``execution.float_report``).
- The loop checks the lease before every tick and stops (raising) once it is lost;
  an RPC error ends the tick, which is retried with backoff (at most 10 s) and
  reported as part of the RPC's outage (``supervision.report``); a database error
  ends :meth:`Executor.run` (its supervisor takes the lease again and starts over).
"""

from __future__ import annotations

import asyncio

import structlog

from intentd.backoff import Backoff
from intentd.chain.errors import ChainUnavailable
from intentd.domain.actions import SignerKind
from intentd.execution.deposit_verifier import DepositVerifier
from intentd.execution.float_report import FloatReport
from intentd.execution.ports import (
    Broadcaster,
    ExecutionStore,
    FeeOracle,
    Keyring,
    L1Fees,
    Lease,
    NodeReader,
)
from intentd.execution.prefill_funds import PrefillFunds
from intentd.execution.sending import TransactionSender
from intentd.execution.settling import Settler
from intentd.execution.starting import Starter
from intentd.execution.transfer_planner import NO_L1_FEE, TransferPlanner
from intentd.settings import ChainConfig, ExecutionConfig, LiquidityConfig
from intentd.supervision import progress, report, rpc
from intentd.wait import wait_any

__all__ = ["Executor"]

log = structlog.get_logger()


class Executor:
    """Performs the actions of one chain. The caller holds the chain's lease."""

    def __init__(
        self,
        chain: ChainConfig,
        config: ExecutionConfig,
        *,
        store: ExecutionStore,
        reader: NodeReader,
        fees: FeeOracle,
        broadcaster: Broadcaster,
        keyring: Keyring,
        verifier: DepositVerifier | None = None,
        l1_fees: L1Fees = NO_L1_FEE,
        liquidity: LiquidityConfig | None = None,
    ) -> None:
        self._config = config
        self._rpc = rpc(chain.name)
        liquidity = liquidity if liquidity is not None else LiquidityConfig()
        relayer = keyring.address(SignerKind.RELAYER)
        sender = TransactionSender(
            chain, store=store, reader=reader, broadcaster=broadcaster, keyring=keyring
        )
        transfers = TransferPlanner(l1_fees, l1_fee_margin_bps=config.l1_fee_margin_bps)
        self._starter = Starter(
            chain,
            config,
            store=store,
            reader=reader,
            fees=fees,
            keyring=keyring,
            sender=sender,
            transfers=transfers,
            funds=PrefillFunds(chain, liquidity, reader=reader, relayer=relayer),
            verifier=verifier,
        )
        self._report = FloatReport(chain, liquidity, store=store, reader=reader, keyring=keyring)
        self._settler = Settler(
            chain,
            config,
            store=store,
            reader=reader,
            fees=fees,
            broadcaster=broadcaster,
            sender=sender,
            starter=self._starter,
            transfers=transfers,
        )

    async def run(self, stop: asyncio.Event, lease: Lease) -> None:
        """Work until ``stop``; a transaction in hand is recorded before returning."""
        wakeup = asyncio.Event()
        await lease.listen(wakeup)
        backoff = 0.0
        try:
            while not stop.is_set():
                await lease.check()
                wakeup.clear()
                try:
                    await self.tick()
                except ChainUnavailable as exc:
                    backoff = Backoff(0.5, cap=10.0).after(backoff)
                    report(self._rpc, exc)  # told as the RPC's outage, not a line per tick
                    log.debug("chain unavailable; retrying", error=str(exc), wait=backoff)
                else:
                    backoff = 0.0
                    progress()
                await wait_any(stop, wakeup, within=max(backoff, self._config.poll_interval))
        finally:
            self._report.forget()

    async def prime(self) -> None:
        """Store the relayer's float once before the first tick, so that the API can
        admit intents to this chain as soon as the executor is ready; an RPC error is
        part of the RPC's outage (``supervision.report``), left to the ticks, which read
        it again."""
        try:
            await self._report.refresh_if_due()
        except ChainUnavailable as exc:
            report(self._rpc, exc)  # told as the RPC's outage, as a tick's would be

    async def tick(self) -> None:
        """Start due actions, advance every transaction in flight, and, when due, read
        and store the relayer's float."""
        await self.start_ready()
        await self.track()
        await self._report.refresh_if_due()

    async def start_ready(self) -> int:
        """Record and broadcast the first transaction of each due ready action."""
        return await self._starter.start_ready()

    async def track(self) -> None:
        """Advance every action in flight by what its receipts say."""
        await self._settler.track()
