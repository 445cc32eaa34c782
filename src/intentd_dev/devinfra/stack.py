"""``up``, ``down`` and ``status`` of the whole local stack.

``up`` is idempotent: what runs and answers is kept, what is missing is (re)started, and
a restarted chain gets its tokens again. ``down`` stops only what ``up`` started.
"""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import requests
from eth_typing import ChecksumAddress
from web3.exceptions import Web3Exception

from intentd_dev.devinfra import chains, envfile, feeds, kafka_mock, postgres, tansu
from intentd_dev.devinfra.accounts import Role, dev_account, ensure_hd_mnemonic, ensure_secret
from intentd_dev.devinfra.contracts import Artifact, aggregator_artifact, connect, token_artifact
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout

Say = Callable[[str], None]

KEY_FILES = {
    Role.DEPLOYER: "deployer.key",
    Role.PAYER: "payer.key",
    Role.RELAYER: "relayer.key",
    Role.GAS_TANK: "gas_tank.key",
}


def up(layout: Layout, say: Say) -> None:
    """Start what is missing and write ``.local/infra.env``; raises `InfraError`."""
    _require_node_modules(layout)
    block_time = chains.block_time_from_env()
    layout.make_dirs()
    _write_secrets(layout, say)
    postgres.ensure_postgres(layout, say)
    broker = kafka_mock.running_broker(layout)
    if broker is None:
        broker = kafka_mock.start_broker(layout)
        say(f"kafka: started mock broker {broker.bootstrap} (pid {broker.pid})")
    else:
        say(f"kafka: running, mock broker {broker.bootstrap} (pid {broker.pid})")
    count, partitions = len(kafka_mock.TOPICS), kafka_mock.PARTITIONS
    say(f"kafka: control {broker.control}; {count} topics of {partitions} partitions pre-created")
    tansu_state: tansu.TansuState | None = None
    if tansu.SUPPORTED:
        tansu_state, started = tansu.ensure_broker(layout)
        verb = "started" if started else "running,"
        say(f"tansu: {verb} broker {tansu_state.bootstrap} (pid {tansu_state.pid})")
    else:
        say("tansu: skipped (its pinned build is for x86-64 Linux only); scale-out tests fail")
    artifact = token_artifact(layout)
    say(f"contracts: TestToken artifact ready ({layout.build / 'TestToken.json'})")
    with ThreadPoolExecutor(len(chains.DEV_CHAINS)) as pool:
        futures = {
            chain.name: pool.submit(chains.ensure_chain, layout, chain, block_time, artifact, say)
            for chain in chains.DEV_CHAINS
        }
        results = {name: future.result() for name, future in futures.items()}
    tokens = {name: found for name, (found, _) in results.items()}
    _ensure_feeds(aggregator_artifact(layout), say)
    if any(fresh for _, fresh in results.values()):
        # The dev database describes the chains it was used with (cursors, intents,
        # transactions in flight); against chains started from genesis it is stale.
        postgres.recreate_database(postgres.DATABASE)
        say(f"postgres: recreated database {postgres.DATABASE} for the new dev chains")
    envfile.write_env(layout.env_file, _endpoints(layout, broker, tansu_state, tokens))
    say(f"infra: ready; endpoints in {layout.env_file}")


def down(layout: Layout, say: Say) -> None:
    """Stop the chains, the brokers and the PostgreSQL server of ``.local/pg`` (if running)."""
    layout.env_file.unlink(missing_ok=True)
    for chain in chains.DEV_CHAINS:
        stopped = chains.stop_chain(layout, chain)
        say(f"anvil {chain.name}: {'stopped' if stopped else 'was not running'}")
    stopped = kafka_mock.stop_broker(layout)
    say(f"kafka: {'stopped' if stopped else 'was not running'}")
    stopped = tansu.stop_broker(layout)
    say(f"tansu: {'stopped' if stopped else 'was not running'}")
    if postgres.stop_postgres(layout):
        say(f"postgres: stopped own server ({layout.pg_data})")
    else:
        say("postgres: nothing to stop (infra-up did not start a server)")


def status(layout: Layout, say: Say) -> bool:
    """Print one line per component; True if everything runs and answers."""
    healthy = True

    def report(component: str, ok: bool, text: str) -> None:
        nonlocal healthy
        healthy = healthy and ok
        say(f"{component}: {text}")

    report("postgres", *postgres.postgres_status(layout))
    broker = kafka_mock.running_broker(layout)
    if broker is None:
        report("kafka", False, "stopped")
    else:
        text = f"running, bootstrap {broker.bootstrap}, control {broker.control} (pid {broker.pid})"
        report("kafka", True, text)
    tansu_state = tansu.running(layout.pidfile(tansu.COMPONENT), layout.state(tansu.COMPONENT))
    if not tansu.SUPPORTED:
        say("tansu: not started on this platform (x86-64 Linux only)")
    elif tansu_state is None:
        report("tansu", False, "stopped")
    else:
        report("tansu", True, f"running, bootstrap {tansu_state.bootstrap} (pid {tansu_state.pid})")
    for chain in chains.DEV_CHAINS:
        ok, text = chains.chain_status(layout, chain)
        report(f"anvil {chain.name}", ok, text)
        if ok:
            with connect(chain.url) as w3:
                absent = feeds.missing(w3)
            listed = "missing " + ", ".join(absent) if absent else "placed"
            report(f"feeds {chain.name}", not absent, f"{listed} (docs/local-infrastructure.md)")
    present = layout.env_file.exists()
    report("infra.env", present, str(layout.env_file) if present else "missing")
    return healthy


def _ensure_feeds(artifact: Artifact, say: Say) -> None:
    """The mock price feeds and the sequencer uptime feed of every dev chain, at their
    fixed addresses (``devinfra.feeds``); those already there are kept as they are."""
    for chain in chains.DEV_CHAINS:
        try:
            with connect(chain.url) as w3:
                placed = feeds.ensure_feeds(w3, artifact)
        except (Web3Exception, requests.RequestException) as error:
            message = f"placing the mock feeds failed: {error}"
            raise InfraError(f"feeds {chain.name}", message) from error
        what = f"placed {', '.join(placed)}" if placed else "all there"
        say(f"feeds {chain.name}: {what} (ETH/USD {feeds.DEV_FEEDS[0].address}, …)")


def _require_node_modules(layout: Layout) -> None:
    if not layout.node_modules.is_dir():
        raise InfraError("npm", f"{layout.node_modules} is missing: run `make install`")
    needed = [layout.node_modules / "solc" / "package.json", layout.node_modules / ".bin" / "anvil"]
    missing = [str(path) for path in needed if not path.exists()]
    if missing:
        raise InfraError("npm", f"{', '.join(missing)} missing: run `make install`")


def _write_secrets(layout: Layout, say: Say) -> None:
    for role, name in KEY_FILES.items():
        ensure_secret(layout.secrets / name, dev_account(role).private_key)
    if ensure_hd_mnemonic(layout.secrets / "hd_mnemonic"):
        say(f"secrets: generated a new HD mnemonic in {layout.secrets / 'hd_mnemonic'}")
    say(f"secrets: dev keys in {layout.secrets} (mode 0600)")


def _endpoints(
    layout: Layout,
    broker: kafka_mock.BrokerState,
    tansu_state: tansu.TansuState | None,
    tokens: dict[str, dict[str, ChecksumAddress]],
) -> dict[str, str]:
    values = {
        "INTENTD_DATABASE_URL": postgres.database_url(),
        "INTENTD_KAFKA_BOOTSTRAP": broker.bootstrap,
        "INTENTD_KAFKA_MOCK_CONTROL": broker.control,
        "INTENTD_HD_MNEMONIC_FILE": str(layout.secrets / "hd_mnemonic"),
        "INTENTD_DEV_DEPLOYER_KEY_FILE": str(layout.secrets / KEY_FILES[Role.DEPLOYER]),
        "INTENTD_DEV_PAYER_KEY_FILE": str(layout.secrets / KEY_FILES[Role.PAYER]),
        "INTENTD_RELAYER_KEY_FILE": str(layout.secrets / KEY_FILES[Role.RELAYER]),
        "INTENTD_GAS_TANK_KEY_FILE": str(layout.secrets / KEY_FILES[Role.GAS_TANK]),
        "INTENTD_DEV_PAYER_ADDRESS": dev_account(Role.PAYER).address,
        "INTENTD_RELAYER_ADDRESS": dev_account(Role.RELAYER).address,
        "INTENTD_GAS_TANK_ADDRESS": dev_account(Role.GAS_TANK).address,
        "INTENTD_FEE_ACCOUNT_ADDRESS": dev_account(Role.FEE).address,
    }
    if tansu_state is not None:
        values["INTENTD_TANSU_BOOTSTRAP"] = tansu_state.bootstrap
    for chain in chains.DEV_CHAINS:
        values[f"INTENTD_{chain.name}_RPC_URL"] = chain.url
        for symbol, address in tokens[chain.name].items():
            values[f"INTENTD_{chain.name}_{symbol}"] = address
    return values
