"""The relayer's float on one chain, read by the chain's executor and stored for the rest.

Where the balance is read, and why: the executor of a chain already holds that chain's
RPC client, the relayer's and the gas tank's addresses, and the records of every
prefill in flight; it is the one role that signs, and only the one that leads the chain
writes. The API never reads RPC on a request: it reads what this stores
(``relayer_float``) with its age (docs/execution.md, "The relayer's float").

Guarantees:

- Every ``liquidity.read_interval`` seconds (at the end of a tick) the figures of the
  records are read first, in one snapshot (``Funds.exposure``), then the
  relayer's balance of every supported token and the native coin and the gas tank's
  native balance, in one request to one node (``NodeReader.balances``). A prefill that
  becomes final between the two is in the balance already; one that does not is still
  reserved: ``free`` can be smaller than the truth, never larger.
- A reading from a node whose head is below the newest block holding a confirmed
  transfer of the relayer is not stored (it would show money that is already paid);
  readings refused so, one after the other, are one warning when they start, a summary
  every 30 s, and one line when a reading is stored again (``supervision.episodes``).
- The rows are stored with ``as_of``, the database's clock at the snapshot; an older
  writer (a deposed leader) never replaces newer rows.
- The metrics of the float (``intentd_relayer_*``, ``intentd_gas_tank_*``) follow each
  stored reading, in whole token units (floats: for dashboards, never for money), and are
  removed when the process stops leading the chain (:meth:`FloatReport.forget`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from intentd import observability as metrics
from intentd.domain.actions import NATIVE, SignerKind
from intentd.domain.liquidity import Float
from intentd.execution.float_figures import Balances, Exposure, FloatRow
from intentd.execution.ports import ExecutionStore, Keyring, NodeReader
from intentd.settings import ChainConfig, LiquidityConfig, NativeTokenConfig, TokenConfig
from intentd.supervision.episodes import Episodes, Wording
from intentd.supervision.outage_log import emit

__all__ = ["FloatReport", "float_rows"]

log = structlog.get_logger()

BEHIND = Wording(
    begun="the relayer's balance came from a node behind its confirmed payments;"
    " the float is not stored",
    lasting="the relayer's balance still comes from nodes behind its payments;"
    " the stored float ages",
    ended="the relayer's float is stored again",
)


def float_rows(
    tokens: list[str], relayer: str, gas_tank: str, exposure: Exposure, read: Balances
) -> list[FloatRow]:
    """The rows of one reading: the relayer's ``tokens`` with their figures, then the
    gas tank's native coin (pure)."""
    rows = [
        FloatRow(
            holder=SignerKind.RELAYER,
            token=token,
            address=relayer,
            balance=read.amounts[(relayer, token)],
            block=read.block,
            reserved=exposure.reserved.get(token, 0),
            owed=exposure.owed.get(token, 0),
            owed_overdue=exposure.overdue.get(token, 0),
            pending=exposure.pending.get(token, 0),
        )
        for token in tokens
    ]
    tank = read.amounts[(gas_tank, NATIVE)]
    rows.append(FloatRow(SignerKind.GAS_TANK, NATIVE, gas_tank, tank, read.block))
    return rows


class FloatReport:
    """Reads and stores the float of one chain (the caller leads the chain)."""

    def __init__(
        self,
        chain: ChainConfig,
        config: LiquidityConfig,
        *,
        store: ExecutionStore,
        reader: NodeReader,
        keyring: Keyring,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._chain = chain
        self._config = config
        self._store = store
        self._reader = reader
        self._relayer = keyring.address(SignerKind.RELAYER).lower()
        self._gas_tank = keyring.address(SignerKind.GAS_TANK).lower()
        self._tokens = [NATIVE, *(t.address.lower() for t in chain.tokens)]
        self._clock = clock
        self._behind: Episodes[str] = Episodes(BEHIND, clock=clock)
        self._due = 0.0
        self._thresholds()

    async def refresh_if_due(self) -> bool:
        """Read and store the float if ``read_interval`` has passed since the last try."""
        now = self._clock()
        if now < self._due:
            return False
        self._due = now + self._config.read_interval  # a failed read is tried again then
        return await self.refresh()

    async def refresh(self) -> bool:
        """Read and store the float now; False if the node lagged (nothing stored)."""
        async with self._store.transaction() as work:
            exposure = await work.funds.exposure(
                self._relayer, overdue_after=self._config.repayment_overdue_after
            )
        holdings = [(self._relayer, token) for token in self._tokens]
        read = await self._reader.balances([*holdings, (self._gas_tank, NATIVE)])
        if read.block < exposure.newest_paid:
            name = self._chain.name
            emit(self._behind.seen(name, node_head=read.block, newest_paid=exposure.newest_paid))
            return False
        rows = float_rows(self._tokens, self._relayer, self._gas_tank, exposure, read)
        async with self._store.transaction() as work:
            await work.funds.save_float(rows, as_of=exposure.as_of)
        emit(self._behind.ended(self._chain.name, node_head=read.block))
        self._show(rows, exposure)
        return True

    def _show(self, rows: list[FloatRow], exposure: Exposure) -> None:
        name = self._chain.name
        for row in rows:
            token = self._token(row.token)
            if row.holder is SignerKind.GAS_TANK:
                metrics.GAS_TANK_BALANCE.labels(name).set(_whole(row.balance, token))
                continue
            labels = (name, token.symbol)
            figures = Float(row.balance, row.reserved, row.owed, row.pending)
            metrics.RELAYER_BALANCE.labels(*labels).set(_whole(row.balance, token))
            metrics.RELAYER_RESERVED.labels(*labels).set(_whole(row.reserved, token))
            metrics.RELAYER_FREE.labels(*labels).set(_whole(figures.free, token))
            metrics.RELAYER_OWED.labels(*labels).set(_whole(row.owed, token))
            metrics.RELAYER_PENDING.labels(*labels).set(_whole(row.pending, token))
            metrics.REPAYMENTS_OVERDUE.labels(*labels).set(row.owed_overdue)
        metrics.FLOAT_READ_AT.labels(name).set(exposure.as_of.timestamp())

    def forget(self) -> None:
        """Remove the chain's float gauges: a process that no longer leads the chain shows
        no figures of it (the alerts compare the leader's only)."""
        name = self._chain.name
        tokens: list[TokenConfig | NativeTokenConfig] = [self._chain.native, *self._chain.tokens]
        for token in tokens:
            for gauge in (
                metrics.RELAYER_BALANCE, metrics.RELAYER_RESERVED, metrics.RELAYER_FREE,
                metrics.RELAYER_OWED, metrics.RELAYER_PENDING, metrics.REPAYMENTS_OVERDUE,
                metrics.RELAYER_FREE_ALERT_BELOW,
            ):  # fmt: skip
                gauge.remove(name, token.symbol)
        for gauge in (
            metrics.GAS_TANK_BALANCE,
            metrics.GAS_TANK_ALERT_BELOW,
            metrics.FLOAT_READ_AT,
        ):
            gauge.remove(name)

    def _thresholds(self) -> None:
        name = self._chain.name
        tokens: list[TokenConfig | NativeTokenConfig] = [self._chain.native, *self._chain.tokens]
        for token in tokens:
            below = token.float_alert_below_units
            if below is not None:
                metrics.RELAYER_FREE_ALERT_BELOW.labels(name, token.symbol).set(
                    _whole(below, token)
                )
        tank = self._chain.gas_tank_alert_below_units
        if tank is not None:
            metrics.GAS_TANK_ALERT_BELOW.labels(name).set(_whole(tank, self._chain.native))

    def _token(self, address: str) -> TokenConfig | NativeTokenConfig:
        found = self._chain.token(address)
        assert found is not None, address
        return found


def _whole(units: int, token: TokenConfig | NativeTokenConfig) -> float:
    scale: int = 10**token.decimals
    return units / scale
