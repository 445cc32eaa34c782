"""``python -m bench chaos``: intents of every scenario paid while roles die and chains reorg.

The run starts two anvil chains of its own (BASE_TESTNET 84532 as the source,
ARBITRUM_TESTNET 421614 as the destination, 1-second blocks), a database and a topic
prefix of its own, and intentd as one process per role (``bench/chaos/roles.py``). It
creates N intents dealt over the scenarios of ``bench/chaos/scenarios.py`` at ``--rate``
intents a second and pays them from signed transactions of its own payers; meanwhile
it kills roles with ``kill -9`` (``--kills-per-role`` each, at random moments, restarted
after 0..1 s) and replaces the newest 1..5 blocks of a random chain with ``anvil_reorg``,
re-including every transaction they held (``--reorgs``); with ``--faults`` it also
breaks the roles' dependencies in bursts (``bench/chaos/faults.py``: RPC providers that
fail, hang, reset and lag, PostgreSQL cut or stalled, the broker down) and measures each
(``bench/chaos/watch.py``); and it moves the ETH / USD feed of the source chain, within
and beyond the slippage, while the ETH intents (priced in USD) are paid, topping up those
whose total a drop raised. A role that exits by itself is restarted a second later and
counted. When everything has settled it checks on chain, to the base unit, every account
the run touched, and the events (``bench/chaos/check.py``), prints the figures and exits
1 on any mismatch or any exit of a role that was not killed.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import asyncpg

from bench.chaos import check
from bench.chaos.chains import Chain, payer_accounts, start_chain
from bench.chaos.faults import Dependencies, FaultOptions
from bench.chaos.figures import Figures
from bench.chaos.roles import Roles, chain_toml, write_config
from bench.chaos.scenarios import (
    COMPLETING,
    NATIVE,
    SCENARIOS,
    Created,
    Key,
    Payment,
    Plan,
    expected_changes,
    expected_native,
    payments,
    plans,
    probe_plan,
)
from bench.chaos.watch import Watch
from bench.head_latency import bench_stack, read_env
from intentd.adapters.evm.price_feeds import running_prices
from intentd.adapters.postgres import Pool, create_pool, migrate
from intentd.adapters.postgres.intent_inserts import PostgresIntentStore
from intentd.contract.record import IntentRow
from intentd.custody import IntentKeys
from intentd.intents.service import IntentRequest, IntentRequestError, create_intent
from intentd.intents.writer import IntentWriter
from intentd.pricing import PriceSource
from intentd.settings import NATIVE_TOKEN, Settings, load_settings
from intentd_dev.devinfra import feeds
from intentd_dev.devinfra import postgres as devinfra_postgres

ROOT = Path(__file__).resolve().parents[2]
SOURCE, DESTINATION = ("BASE_TESTNET", 84532), ("ARBITRUM_TESTNET", 421614)
PAYERS = 8


@dataclass(frozen=True)
class Options:
    seed: int = 1
    intents: int = 16
    rate: float = 4.0  # intents created a second
    kills_per_role: int = 2
    reorgs: int = 2
    expires_in: int = 40  # lifetime of the short-lived scenarios, seconds
    settle_timeout: float = 300.0
    price_moves: int = 4  # moves of the ETH / USD feed, within and beyond the slippage
    keep: bool = False  # keep the database and the logs
    scenarios: tuple[str, ...] = SCENARIOS
    faults: FaultOptions = field(default_factory=FaultOptions)


class Run:
    def __init__(
        self,
        options: Options,
        settings: Settings,
        pool: Pool,
        *,
        chains: dict[str, Chain],
        roles: Roles,
        deps: Dependencies,
    ) -> None:
        self.o, self.settings, self.pool = options, settings, pool
        self.chains, self.roles, self.deps = chains, roles, deps
        self.watch = Watch(pool, roles, chains, self.probe, overlap=options.faults.overlap)
        self.rng = random.Random(options.seed)
        self.payers = payer_accounts(options.seed, PAYERS)
        self.created: list[Created] = []
        self.made = asyncio.Condition()
        self.sent: set[tuple[str, str]] = set()
        self.figures = Figures()
        self.writer = IntentWriter(PostgresIntentStore(pool), IntentKeys(settings.mnemonic()))
        self.prices: PriceSource | None = None  # the run's own refresher (go)

    async def intent(self, plan: Plan) -> Created:
        source = self.chains["source"]
        short = plan.scenario not in COMPLETING
        request = IntentRequest(
            amount=plan.usd or format(Decimal(plan.amount) / 10**6, "f"),
            amount_symbol="USD" if plan.usd else None,
            token_in=NATIVE_TOKEN if plan.usd else source.tokens["USDC"],
            source_chain=SOURCE[0],
            destination_chain=DESTINATION[0],
            recipient=plan.recipient,
            refund_address=plan.refund_address,
            expires_in=self.o.expires_in if short else 3600,
        )
        row = await self.create(request)
        made = Created(
            plan, row.id, row.intent_address.lower(), row.total_due,
            row.fees_in_asset + row.app_fee_in_asset, row.amount_out, quoted=row.total_due,
        )  # fmt: skip
        made.payments = payments(plan, row.total_due)
        self.created.append(made)
        async with self.made:
            self.made.notify_all()
        for payment in made.payments:
            if payment.phase == 1:
                await asyncio.sleep(plan.pause)
            elif payment.phase == 2:  # once the intent has ended: late whatever the block
                await asyncio.sleep(max((row.expires_at - datetime.now(UTC)).total_seconds(), 0))
                await self.ended(row.id)
            chain = self.chains[payment.chain]
            tx_hash = await chain.pay(
                self.payers[plan.payer],
                chain.tokens.get(payment.token),  # None: ETH
                made.intent_address,
                payment.amount,
            )
            self.sent.add((chain.name, tx_hash))
            self.figures.deposits += 1
        if plan.scenario in NATIVE and plan.scenario in COMPLETING:
            await self.top_up(made)
        return made

    async def create(self, request: IntentRequest) -> IntentRow:
        """Create at the feed's price now; a price refused (the RPC proxies in a fault
        burst, the refresher not yet read) is asked again, up to a minute."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return await create_intent(
                    self.settings, self.writer, request,
                    client_id=UUID(self.settings.intents.default_client_id),
                    now=datetime.now(UTC), prices=self.prices,
                )  # fmt: skip
            except IntentRequestError as exc:
                if exc.code != "price_unavailable" or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    async def top_up(self, made: Created) -> None:
        """As a wallet following the intent: once every payment to it is credited and
        valued, pay what a raised total still lacks (the price fell beyond the slippage
        since creation), until it is covered (at most 10 times)."""
        chain = self.chains["source"]
        for _ in range(10):
            short = await self.shortfall(made)
            if not short:
                return
            tx_hash = await chain.pay(
                self.payers[made.plan.payer], None, made.intent_address, short
            )
            made.payments.append(Payment("source", "ETH", short, 3))
            self.sent.add((chain.name, tx_hash))
            self.figures.top_ups += 1

    async def shortfall(self, made: Created) -> int:
        """What the intent lacks once all its payments are credited and valued (0: covered,
        ended, or not settled within two minutes: the settle check reports it)."""
        deadline = time.monotonic() + 120
        paid = [p for p in made.payments if p.chain == "source"]
        while time.monotonic() < deadline:
            row = await self.pool.fetchrow(
                "SELECT i.status, i.received, i.total_due, i.awaiting_price,"
                " (SELECT count(*) FROM deposits d WHERE d.intent_id = i.id"
                "  AND d.disposition = 'credited') AS credited"
                " FROM intents i WHERE i.id = $1",
                made.intent_id,
            )
            assert row is not None
            if row["status"] != "PENDING":
                return 0
            if row["credited"] >= len(paid) and not row["awaiting_price"]:
                return max(int(row["total_due"]) - int(row["received"]), 0)
            await asyncio.sleep(0.5)
        return 0

    async def move_prices(self) -> None:
        """``price_moves`` new rounds of the ETH / USD feed, spread over the creation of
        the intents as the kills are: in turn a move within the slippage (0.2 to 0.8 %)
        and one beyond it (3 to 10 % down, or 3 to 8 % up from 3,000 USD)."""
        rng = random.Random(f"prices-{self.o.seed}")
        usd = Decimal(3000)
        for done in range(self.o.price_moves):
            async with self.made:
                fraction = (done + rng.random()) / self.o.price_moves
                await self.made.wait_for(lambda f=fraction: len(self.created) >= f * self.o.intents)
            if done % 2 == 0:
                step = Decimal(rng.randint(20, 80)) / 10_000
                usd = usd * (1 + step if rng.random() < 0.5 else 1 - step)
                kind = "within"
            else:
                down = rng.random() < 0.6
                step = Decimal(rng.randint(300, 1000 if down else 800)) / 10_000
                usd = Decimal(3000) * (1 - step if down else 1 + step)
                kind = "beyond"
            usd = usd.quantize(Decimal("0.01"))
            await self.chains["source"].set_eth_price(usd)
            self.figures.price_moves.append(f"{kind} {usd}")

    async def probe(self) -> float | None:
        """Seconds until an intent created and paid now is FUNDED and that event is
        published (None: not within a minute); the probe's money is checked as any."""
        started = time.monotonic()
        index = self.figures.probes
        self.figures.probes += 1
        made = await self.intent(probe_plan(self.o.seed, index, PAYERS))
        funded = (
            "SELECT EXISTS (SELECT 1 FROM intent_events WHERE intent_id = $1"
            " AND type = 'intent_funded')"
        )
        unpublished = "SELECT EXISTS (SELECT 1 FROM outbox WHERE id <= $1 AND published_at IS NULL)"
        upto = None
        while time.monotonic() - started < 60:
            if upto is None and await self.pool.fetchval(funded, made.intent_id):
                upto = await self.pool.fetchval("SELECT coalesce(max(id), 0) FROM outbox")
            if upto is not None and not await self.pool.fetchval(unpublished, upto):
                return time.monotonic() - started
            await asyncio.sleep(0.2)
        return None

    async def pay_all(self) -> None:
        tasks = []
        for plan in plans(self.o.seed, self.o.intents, PAYERS, self.o.scenarios):
            tasks.append(asyncio.create_task(self.intent(plan)))
            await asyncio.sleep(1 / self.o.rate)
        await asyncio.gather(*tasks)

    async def rebroadcast(self) -> None:
        """Every 15 s, payments the nodes forgot are sent again (see Chain.rebroadcast)."""
        while True:
            await asyncio.sleep(15)
            for chain in self.chains.values():
                self.figures.resent += await chain.rebroadcast()

    async def ended(self, intent_id: int) -> None:
        """Until the intent has left PENDING (the database is polled: no notification)."""
        query = "SELECT status <> 'PENDING' FROM intents WHERE id = $1"
        while True:
            if await self.pool.fetchval(query, intent_id):
                return
            await asyncio.sleep(1)

    async def progress(self, fraction: float) -> None:
        """Until ``fraction`` of the intents are created, then a pause of 0.5..1.5 s: the
        kills and the reorgs are spread over the creation of the intents, however
        fast the machine creates them."""
        async with self.made:
            await self.made.wait_for(lambda: len(self.created) >= fraction * self.o.intents)
        await asyncio.sleep(self.rng.uniform(0.5, 1.5))

    async def kill_all(self) -> None:
        """``kills_per_role`` kills of every role, restarted 0..1 s later."""
        owed = {role.name: self.o.kills_per_role for role in self.roles.roles}
        total = sum(owed.values())
        done = 0
        while (role := self.roles.pick(self.rng, owed)) is not None:
            await self.progress((done + self.rng.random()) / total)
            await self.roles.kill_and_restart(role, self.rng.uniform(0, 1))
            done += 1

    async def fault_all(self) -> None:
        """The bursts of every fault class, spread over the creation of the intents as
        the kills are; each runs (and is measured) while the next ones start."""
        schedule = self.o.faults.schedule(self.o.seed)
        if not schedule:
            return
        self.figures.probe_baseline = await self.probe()  # before any fault
        rng = random.Random(f"fault-times-{self.o.seed}")
        bursts = []
        for done, (cls, seconds) in enumerate(schedule):
            async with self.made:
                fraction = (done + rng.random()) / len(schedule)
                await self.made.wait_for(lambda f=fraction: len(self.created) >= f * self.o.intents)
            bursts.append(asyncio.create_task(self.watch.burst(self.deps, cls, seconds)))
        await asyncio.gather(*bursts)

    async def reorg_all(self) -> None:
        for done in range(self.o.reorgs):
            await self.progress((done + self.rng.random()) / self.o.reorgs)
            depth = self.rng.randint(1, 5)
            chain = self.chains[self.rng.choice(("source", "destination"))]
            for _ in range(20):  # up to 10 s for blocks with transactions to move
                if await chain.busy(depth):
                    break
                await asyncio.sleep(0.5)
            self.figures.reincluded += await chain.reorg(depth)
            self.figures.reorgs[depth] += 1

    async def go(self) -> Figures:
        started = time.monotonic()
        before_tokens, before_native = await self.balances_before()
        self.roles.start_all()
        await self.wait_started()
        keeper = asyncio.create_task(self.rebroadcast())
        supervisor = asyncio.create_task(self.roles.supervise(self.watch.on_exit))
        try:
            await asyncio.gather(
                self.pay_all(),
                self.kill_all(),
                self.reorg_all(),
                self.fault_all(),
                self.move_prices(),
            )
            settling = time.monotonic()
            self.figures.unsettled = await check.wait_settled(
                self.pool, self.sent, self.o.settle_timeout
            )
        finally:
            keeper.cancel()
            supervisor.cancel()
        self.figures.settle = time.monotonic() - settling
        self.figures.wall = time.monotonic() - started
        self.figures.intents = len(self.created)
        self.figures.kills = {role.name: role.kills for role in self.roles.roles}
        change = expected_changes(
            self.created, self.relayer, self.fee_account, [p.address for p in self.payers]
        )
        found = await check.token_mismatches(self.chains, before_tokens, change)
        revalued, self.figures.revaluations = await check.revalued(self.pool, self.created)
        found += revalued
        min_sweep = self.settings.chains[SOURCE[0]].native.min_sweep_units
        balances, gross, paid_in = expected_native(
            self.created, self.relayer, self.fee_account, min_sweep
        )
        native, self.figures.transactions, paid = await check.native_mismatches(
            self.pool, self.chains, before_native, paid_in
        )
        native += await check.native_scenario_mismatches(self.chains, balances, gross, paid)
        events, self.figures.late_on_time = await check.event_mismatches(self.pool, self.created)
        found += native + events
        self.figures.exits = list(self.roles.exits)
        self.figures.faults = self.watch.report()
        self.figures.timeline = self.watch.timeline()
        self.figures.noisy = self.watch.noisy()
        self.figures.recoveries = self.watch.recoveries()
        self.figures.served = self.deps.served()
        if self.figures.unsettled:
            found.insert(
                0, f"not settled after {self.o.settle_timeout:.0f} s: {self.figures.unsettled}"
            )
        self.figures.mismatches = found
        return self.figures

    async def wait_started(self) -> None:
        """Until both pollers have a cursor: a poller's first cursor is the head, so
        a payment before it would never be seen."""
        deadline = time.monotonic() + 60
        while await self.pool.fetchval("SELECT count(*) FROM chain_cursors") < 2:
            if time.monotonic() > deadline:
                raise SystemExit(f"the pollers did not start; see {self.roles.logs}")
            await asyncio.sleep(0.2)

    @property
    def relayer(self) -> str:
        return self.settings.chains[SOURCE[0]].relayer

    @property
    def fee_account(self) -> str:
        return str(self.settings.chains[SOURCE[0]].fee_account)

    async def balances_before(self) -> tuple[dict[Key, int], dict[tuple[str, str], int]]:
        tokens: dict[Key, int] = {}
        for side, chain in self.chains.items():
            for symbol, token in chain.tokens.items():
                for owner in (self.relayer, self.fee_account, *(p.address for p in self.payers)):
                    tokens[(side, symbol, owner.lower())] = await chain.token_balance(token, owner)
        native: dict[tuple[str, str], int] = {}
        gas_tank = read_env(ROOT / ".local/infra.env")["INTENTD_GAS_TANK_ADDRESS"]
        for chain in self.chains.values():
            for owner in (self.relayer, gas_tank, self.fee_account):
                native[(chain.name, owner.lower())] = await chain.native(owner)
        return tokens, native


async def run(options: Options, logs: Path | None = None) -> Figures:
    infra = read_env(ROOT / ".local/infra.env")
    database = f"intentd_chaos_{os.getpid()}_{options.seed}"
    own_logs = logs is None
    logs = logs or Path(tempfile.mkdtemp(prefix="intentd-chaos-"))
    deps = Dependencies(options.faults, options.seed)
    if options.faults.broker:  # a broker of its own, to take down
        broker = deps.start_broker(logs / "broker")
        infra["INTENTD_KAFKA_BOOTSTRAP"] = broker.bootstrap
        infra["INTENTD_KAFKA_MOCK_CONTROL"] = broker.control
    db_url, env = await bench_stack(infra, database)
    env.update({k: v for k, v in infra.items() if k not in env})
    env.update(
        INTENTD__KAFKA__SESSION_TIMEOUT_MS="3000",
        INTENTD__KAFKA__HEARTBEAT_INTERVAL_MS="500",
        INTENTD__OBSERVABILITY__LOG_LEVEL="info",
        INTENTD_WEBHOOK_KEY=secrets.token_hex(32),
        INTENTD__WEBHOOKS__GROUP=f"{env['INTENTD__KAFKA__TOPIC_PREFIX']}-webhooks",
    )
    env["INTENTD__DATABASE__URL"] = roles_db_url = await deps.database_url(db_url)
    chains: dict[str, Chain] = {}
    pool = await create_pool(db_url, max_size=4)
    roles: Roles | None = None
    try:
        await migrate(pool)
        chains["source"] = await start_chain(*SOURCE, 1)
        chains["destination"] = await start_chain(*DESTINATION, 1)
        payers = payer_accounts(options.seed, PAYERS)
        for chain in chains.values():
            await chain.provision(payers, infra["INTENTD_RELAYER_ADDRESS"])
        await chains["source"].place_feeds(Decimal(3000))  # ETH / USD, moved during the run
        timeout = options.faults.rpc_timeout if options.faults.rpc else None
        sections = ""
        for side, c in chains.items():
            urls = await deps.add_chain(c.name, c.url)
            feed = feeds.feed_address("ETH") if side == "source" else None
            sections += chain_toml(
                c.name, c.chain_id, urls, c.tokens, infra, rpc_timeout=timeout, eth_feed=feed
            )
        config = logs / "chaos.toml"
        write_config(config, roles_db_url, infra, sections)
        settings = load_settings(config, env)  # as the roles see it
        roles = Roles(config, env, logs)
        for name, _ in (SOURCE, DESTINATION):
            roles.add(f"poll-{name}", "poll", "--chain", name)
            roles.add(f"execute-{name}", "execute", "--chain", name)
        roles.add("lifecycle", "lifecycle")
        roles.add("webhooks", "webhooks")
        roles.add("api", "api")
        await asyncio.sleep(3)  # a few blocks above the provisioning: never reorged away
        async with running_prices(settings) as prices:  # what the run's creates are priced at
            run_ = Run(options, settings, pool, chains=chains, roles=roles, deps=deps)
            run_.prices = prices
            figures = await run_.go()
        stopping = time.monotonic()
        figures.stop_codes = {k: v for k, v in (await roles.stop()).items() if v != 0}
        figures.stop_seconds = time.monotonic() - stopping
        return figures
    finally:
        if roles is not None and not roles.stopped:
            codes = await roles.stop()
            if any(codes.values()):
                print(f"  exit statuses at the end: {codes}")
        for chain in chains.values():
            await chain.stop()
        await pool.close()
        await deps.close()
        if not options.keep:
            await drop_database(database)
            if own_logs:
                shutil.rmtree(logs, ignore_errors=True)
        else:
            print(f"  kept: database {database}, logs in {logs}")


async def drop_database(name: str) -> None:
    admin = await asyncpg.connect(devinfra_postgres.database_url("postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()
