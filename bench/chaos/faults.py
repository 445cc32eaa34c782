"""The chaos run's dependency faults: RPC providers, PostgreSQL and the broker, in bursts.

With ``--faults`` the roles reach each dependency through something the run controls:

- **RPC**: each chain's ``rpc_urls`` is an :class:`~intentd_dev.rpc_faults.RpcFaultProxy`
  in front of its anvil, and, with the ``stale`` class, a second URL: another proxy that
  is always ``--stale-blocks`` behind (a failover provider that is a stale copy);
- **PostgreSQL**: the roles' database URL goes through a
  :class:`~intentd_dev.fault_proxy.TcpFaultProxy` (the run's own checks connect directly);
- **the broker**: the run starts a dev broker of its own (librdkafka's mock cluster) and
  takes it down and up (``kafka_mock.set_broker_down``): clients learn broker addresses from
  metadata, so a TCP proxy in front of the bootstrap address would be bypassed.

Fault classes (``--faults``, comma-separated; ``rpc``, ``db`` and ``broker`` name their
groups): ``http`` (HTTP 500/502/429), ``rpc-error`` (``header not found``, ``limit
exceeded``), ``hang`` (no answer past the client's timeout), ``reset`` (connection reset
mid-answer), ``lag`` (a load-balanced provider whose calls land on a node
``--lag-blocks`` behind), ``receipts`` (receipts of the newest ``--receipt-blocks``
blocks missing), ``stale`` (the first URL answers 502 to everything, so clients fail over
to the stale copy), ``db-cut`` (every connection reset, new ones refused), ``db-stall``
(connections accepted, nothing forwarded), ``broker`` (every broker connection closed,
new ones refused). The RPC error classes hit a share (``--fault-share``) of the POSTs of
both chains' providers; ``lag`` lands that share on the lagging node. At the end of
every RPC burst the stale copy (if any) answers 502 for 1.5 s, so clients that failed
over to it come back.

Each class gets ``--fault-bursts`` bursts of ``--fault-seconds`` (drawn uniformly),
spread over the creation of the intents like the kills and drawn from the seed.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from intentd_dev.devinfra.kafka_mock import (
    BrokerState,
    set_broker_down,
    start_broker,
    stop_broker,
)
from intentd_dev.devinfra.layout import Layout
from intentd_dev.fault_proxy import TcpFaultProxy, through_proxy
from intentd_dev.rpc_faults import Fault, RpcFaultProxy

RPC = ("http", "rpc-error", "hang", "reset", "lag", "receipts", "stale")
DB = ("db-cut", "db-stall")
BROKER = ("broker",)
GROUPS = {"rpc": RPC, "db": DB, "broker": BROKER, "all": RPC + DB + BROKER}
CLASSES = RPC + DB + BROKER
_PROXY_FAULT: dict[str, Fault] = {
    "http": "http",
    "rpc-error": "rpc_error",
    "hang": "hang",
    "reset": "reset",
    "stale": "http",
}
PUSH_BACK = 1.5
"""Seconds the stale copy answers 502 after an RPC burst, so clients fail back."""


def parse_classes(text: str) -> tuple[str, ...]:
    """``rpc,db-cut`` -> the fault classes it names, in :data:`CLASSES` order."""
    named: set[str] = set()
    for word in filter(None, (w.strip() for w in text.split(","))):
        if word in GROUPS:
            named.update(GROUPS[word])
        elif word in CLASSES:
            named.add(word)
        else:
            raise ValueError(
                f"unknown fault class {word!r}; one of {', '.join(GROUPS)}, {', '.join(CLASSES)}"
            )
    return tuple(c for c in CLASSES if c in named)


@dataclass(frozen=True)
class FaultOptions:
    classes: tuple[str, ...] = ()
    bursts: int = 2  # per class
    seconds: tuple[float, float] = (3.0, 8.0)  # a burst's length, drawn uniformly
    share: float = 0.5  # of the POSTs an RPC error burst hits, or that land on the lagging node
    lag_blocks: int = 3
    receipt_blocks: int = 2
    stale_blocks: int = 3
    rpc_timeout: float = 4.0  # the roles' chains.*.rpc_timeout in a fault run
    hang_seconds: float = 6.0  # past rpc_timeout
    overlap: bool = False  # bursts may overlap (else each waits for the last to be measured)

    @property
    def rpc(self) -> bool:
        return any(c in RPC for c in self.classes)

    @property
    def db(self) -> bool:
        return any(c in DB for c in self.classes)

    @property
    def broker(self) -> bool:
        return "broker" in self.classes

    def schedule(self, seed: int) -> list[tuple[str, float]]:
        """(class, seconds) of every burst, in the order they start."""
        rng = random.Random(f"faults-{seed}")
        slots = [c for c in self.classes for _ in range(self.bursts)]
        rng.shuffle(slots)
        return [(c, rng.uniform(*self.seconds)) for c in slots]


class Dependencies:
    """The proxies between the roles and their dependencies, and the bursts on them."""

    def __init__(self, options: FaultOptions, seed: int) -> None:
        self.o = options
        self.seed = seed
        self.rpc: dict[str, RpcFaultProxy] = {}  # chain name -> the first URL's proxy
        self.stale: dict[str, RpcFaultProxy] = {}  # chain name -> the stale copy
        self.db: TcpFaultProxy | None = None
        self.broker_control: str | None = None
        self._broker_layout: Layout | None = None
        self._db_lock = asyncio.Lock()
        self._broker_lock = asyncio.Lock()

    async def add_chain(self, name: str, url: str) -> list[str]:
        """The ``rpc_urls`` the roles get for the chain at ``url``."""
        if not self.o.rpc:
            return [url]
        index = len(self.rpc)
        proxy = RpcFaultProxy(url, seed=self.seed * 100 + index, hang_seconds=self.o.hang_seconds)
        await proxy.start()
        self.rpc[name] = proxy
        if "stale" not in self.o.classes:
            return [proxy.url]
        stale = RpcFaultProxy(url, seed=self.seed * 100 + 50 + index, lag=self.o.stale_blocks)
        await stale.start()
        self.stale[name] = stale
        return [proxy.url, stale.url]

    def start_broker(self, directory: Path) -> BrokerState:
        """A dev broker of the run's own (under ``directory``), to take down and up."""
        layout = Layout(directory)
        layout.run.mkdir(parents=True, exist_ok=True)
        state = start_broker(layout)
        self._broker_layout = layout
        self.broker_control = state.control
        return state

    async def database_url(self, url: str) -> str:
        """The roles' database URL (through the proxy when the run cuts PostgreSQL)."""
        if not self.o.db:
            return url
        parts = urlsplit(url)
        self.db = TcpFaultProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        await self.db.start()
        return through_proxy(url, self.db)

    async def burst(self, cls: str, seconds: float) -> None:
        """One burst of ``cls`` for ``seconds``; returns when the dependency is back."""
        if cls in DB:
            assert self.db is not None
            async with self._db_lock:
                if cls == "db-cut":
                    await self.db.cut()
                else:
                    self.db.stall()
                try:
                    await asyncio.sleep(seconds)
                finally:
                    await self.db.restore()
        elif cls == "broker":
            assert self.broker_control is not None
            async with self._broker_lock:
                await asyncio.to_thread(set_broker_down, self.broker_control, True)
                try:
                    await asyncio.sleep(seconds)
                finally:
                    await asyncio.to_thread(set_broker_down, self.broker_control, False)
        else:
            await self._rpc_burst(cls, seconds)

    async def _rpc_burst(self, cls: str, seconds: float) -> None:
        for proxy in self.rpc.values():
            if cls == "lag":
                proxy.burst("lag", seconds, share=self.o.share, blocks=self.o.lag_blocks)
            elif cls == "receipts":
                proxy.burst("receipts", seconds, blocks=self.o.receipt_blocks)
            else:
                share = 1.0 if cls == "stale" else self.o.share
                proxy.burst(_PROXY_FAULT[cls], seconds, share=share)
        await asyncio.sleep(seconds)
        for stale in self.stale.values():
            stale.burst("http", PUSH_BACK)

    def served(self) -> dict[str, int]:
        """What the RPC proxies answered, summed over the chains (POSTs by kind)."""
        total: dict[str, int] = {}
        for proxy in (*self.rpc.values(), *self.stale.values()):
            kind = "stale copy" if proxy in self.stale.values() else ""
            for what, count in proxy.served.items():
                key = f"{kind} {what}".strip()
                total[key] = total.get(key, 0) + count
        return total

    async def close(self) -> None:
        for proxy in (*self.rpc.values(), *self.stale.values()):
            await proxy.close()
        if self.db is not None:
            await self.db.close()
        if self._broker_layout is not None:
            stop_broker(self._broker_layout)
