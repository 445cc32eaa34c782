"""The dev tooling against the running stack (``make infra-up``) and ephemeral anvils.

The sync tooling (anvil, web3 deployments) runs in `asyncio.to_thread`, as tests of the
async daemon should call it.
"""

import asyncio
import secrets
import stat
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from eth_account import Account
from eth_typing import ChecksumAddress
from web3 import Web3

from intentd_dev.devinfra.accounts import Role, dev_account
from intentd_dev.devinfra.anvil import AnvilProcess, rpc_chain_id, start_anvil
from intentd_dev.devinfra.chains import DEV_CHAINS, MINT_WHOLE_TOKENS, provision_tokens
from intentd_dev.devinfra.contracts import (
    balance_of,
    connect,
    deploy_token,
    has_code,
    mint,
    token_artifact,
)
from intentd_dev.devinfra.kafka_mock import KafkaMockError, create_topics, ping

pytestmark = pytest.mark.integration


@pytest.fixture
async def chain() -> AsyncIterator[AnvilProcess]:
    """An ephemeral automining anvil with a chain id no configured chain uses."""
    instance = await asyncio.to_thread(start_anvil, 777_001)
    yield instance
    await asyncio.to_thread(instance.stop)


async def test_control_endpoint_creates_topics_that_work_end_to_end(
    infra: dict[str, str],
) -> None:
    control = infra["INTENTD_KAFKA_MOCK_CONTROL"]
    topic = f"devinfra-{secrets.token_hex(4)}"
    assert ping(control)
    create_topics(control, [topic], partitions=2)
    create_topics(control, [topic], partitions=2)  # idempotent

    bootstrap = infra["INTENTD_KAFKA_BOOTSTRAP"]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        for n in range(3):
            await producer.send_and_wait(topic, f"value-{n}".encode(), key=b"same-key")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"{topic}-group",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        received: list[tuple[int, bytes | None]] = []
        async with asyncio.timeout(30):
            while len(received) < 3:
                batches = await consumer.getmany(timeout_ms=500)
                received += [(m.partition, m.value) for ms in batches.values() for m in ms]
        await consumer.commit()
        (partition,) = {p for p, _ in received}  # one key, so one partition
        assert await consumer.committed(TopicPartition(topic, partition)) == 3
    finally:
        await consumer.stop()
    assert [value for _, value in received] == [b"value-0", b"value-1", b"value-2"]


async def test_control_endpoint_refuses_bad_names_and_other_partition_counts(
    infra: dict[str, str],
) -> None:
    control = infra["INTENTD_KAFKA_MOCK_CONTROL"]
    topic = f"devinfra-{secrets.token_hex(4)}"
    create_topics(control, [topic], partitions=1)
    with pytest.raises(KafkaMockError, match="exists with 1 partitions"):
        create_topics(control, [topic], partitions=4)
    with pytest.raises(KafkaMockError, match="invalid topic name"):
        create_topics(control, ["no spaces allowed"])


async def test_start_anvil_serves_the_chain_id_asked_and_stops(chain: AnvilProcess) -> None:
    assert chain.url == f"http://127.0.0.1:{chain.port}"
    assert await asyncio.to_thread(rpc_chain_id, chain.port) == 777_001
    interval = await asyncio.to_thread(start_anvil, 777_002, None, 0.2)
    try:
        first_block = await asyncio.to_thread(_block_number, interval.url)
        deadline = time.monotonic() + 30  # until a block comes, not 0.6 s
        while await asyncio.to_thread(_block_number, interval.url) == first_block:
            assert time.monotonic() < deadline, "interval mining made no block"
            await asyncio.sleep(0.1)
        # Interval mining makes blocks without transactions.
        assert await asyncio.to_thread(_block_number, interval.url) > first_block
    finally:
        await asyncio.to_thread(interval.stop)
    assert await asyncio.to_thread(rpc_chain_id, interval.port) is None


def _block_number(url: str) -> int:
    with connect(url) as w3:
        return w3.eth.block_number


async def test_deploy_token_then_mint_moves_balance_and_emits_transfer(
    chain: AnvilProcess,
) -> None:
    deployer, payer = dev_account(Role.DEPLOYER), dev_account(Role.PAYER)
    rogue = await asyncio.to_thread(
        deploy_token, chain.url, deployer.private_key, "Rogue Dollar", "RUSD", 18
    )
    assert Web3.is_checksum_address(rogue)
    await asyncio.to_thread(mint, chain.url, deployer.private_key, rogue, payer.address, 5 * 10**18)

    assert await asyncio.to_thread(balance_of, chain.url, rogue, payer.address) == 5 * 10**18
    symbol, decimals, transfers = await asyncio.to_thread(_token_facts, chain.url, rogue)
    assert (symbol, decimals) == ("RUSD", 18)
    assert transfers == [("0x" + "00" * 20, payer.address, 5 * 10**18)]


def _token_facts(url: str, address: ChecksumAddress) -> tuple[str, int, list[tuple[str, str, int]]]:
    """symbol(), decimals() and every Transfer (from, to, value) of the token at `address`."""
    with connect(url) as w3:
        token = w3.eth.contract(address=address, abi=token_artifact().abi)
        logs = token.events.Transfer().get_logs(from_block=0)
        transfers = [(log["args"]["from"], log["args"]["to"], log["args"]["value"]) for log in logs]
        return token.functions.symbol().call(), token.functions.decimals().call(), transfers


async def test_dev_chains_hold_the_configured_tokens_minted_to_payer_and_relayer(
    infra: dict[str, str],
) -> None:
    # Other tests spend from these accounts, so only what minting guarantees is checked.
    holders = [infra["INTENTD_DEV_PAYER_ADDRESS"], infra["INTENTD_RELAYER_ADDRESS"]]
    for dev_chain in DEV_CHAINS:
        url = infra[f"INTENTD_{dev_chain.name}_RPC_URL"]
        assert await asyncio.to_thread(rpc_chain_id, dev_chain.port) == dev_chain.chain_id
        for symbol in ("USDC", "USDT"):
            token = Web3.to_checksum_address(infra[f"INTENTD_{dev_chain.name}_{symbol}"])
            supply, balances = await asyncio.to_thread(_supply_and_balances, url, token, holders)
            assert supply >= len(holders) * MINT_WHOLE_TOKENS * 10**6, (dev_chain.name, symbol)
            assert all(balance > 0 for balance in balances), (dev_chain.name, symbol, balances)


def _supply_and_balances(url: str, token: str, holders: list[str]) -> tuple[int, list[int]]:
    with connect(url) as w3:
        contract = w3.eth.contract(
            address=Web3.to_checksum_address(token), abi=token_artifact().abi
        )
        balances = [
            contract.functions.balanceOf(Web3.to_checksum_address(h)).call() for h in holders
        ]
        return contract.functions.totalSupply().call(), balances


def test_secret_files_are_private_and_match_the_addresses(infra: dict[str, str]) -> None:
    key_files = {
        "INTENTD_DEV_PAYER_KEY_FILE": "INTENTD_DEV_PAYER_ADDRESS",
        "INTENTD_RELAYER_KEY_FILE": "INTENTD_RELAYER_ADDRESS",
        "INTENTD_GAS_TANK_KEY_FILE": "INTENTD_GAS_TANK_ADDRESS",
    }
    for file_key, address_key in key_files.items():
        path = Path(infra[file_key])
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        key = path.read_text().strip()
        assert Account.from_key(key).address == infra[address_key]
    mnemonic = Path(infra["INTENTD_HD_MNEMONIC_FILE"])
    assert stat.S_IMODE(mnemonic.stat().st_mode) == 0o600
    assert len(mnemonic.read_text().split()) == 12


async def test_a_real_token_is_placed_at_the_real_networks_address() -> None:
    """USDC of the dev Base Sepolia sits where Base Sepolia has it, works there (name,
    symbol, decimals, balances, transfers), and the deployed copy is gone."""
    dev_chain = next(c for c in DEV_CHAINS if c.name == "BASE_TESTNET")
    own = await asyncio.to_thread(start_anvil, dev_chain.chain_id)
    try:
        tokens = await asyncio.to_thread(_provision, own.url, dev_chain.real_tokens)
        usdc = tokens["USDC"]
        assert usdc == "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
        assert tokens["USDT"] != usdc
        symbol, decimals, transfers = await asyncio.to_thread(_token_facts, own.url, usdc)
        assert (symbol, decimals) == ("USDC", 6)
        payer, relayer = dev_account(Role.PAYER), dev_account(Role.RELAYER)
        minted = MINT_WHOLE_TOKENS * 10**6
        assert {(to, value) for _, to, value in transfers} == {
            (payer.address, minted),
            (relayer.address, minted),
        }
        supply, _ = await asyncio.to_thread(_supply_and_balances, own.url, usdc, [])
        assert supply == 2 * minted
        assert await asyncio.to_thread(_name, own.url, usdc) == "Test USD Coin"
        deployer_first = Web3.to_checksum_address("0x5fbdb2315678afecb367f032d93f642f64180aa3")
        assert not await asyncio.to_thread(_has_code, own.url, deployer_first)
    finally:
        await asyncio.to_thread(own.stop)


def _provision(url: str, real: Mapping[str, ChecksumAddress]) -> dict[str, ChecksumAddress]:
    with connect(url) as w3:
        return provision_tokens(w3, token_artifact(), real)


def _name(url: str, address: ChecksumAddress) -> str:
    with connect(url) as w3:
        name: str = (
            w3.eth.contract(address=address, abi=token_artifact().abi).functions.name().call()
        )
        return name


def _has_code(url: str, address: ChecksumAddress) -> bool:
    with connect(url) as w3:
        return has_code(w3, address)


async def test_a_private_broker_goes_down_and_comes_back_keeping_its_records(
    tmp_path: Path,
) -> None:
    from aiokafka.errors import KafkaConnectionError
    from tests.outage_support import private_broker

    async with private_broker(tmp_path) as broker:
        broker.create(["outage"], partitions=1)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        await producer.start()
        try:
            await producer.send_and_wait("outage", b"before")
        finally:
            await producer.stop()
        broker.down()
        refused = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=2000)
        with pytest.raises(KafkaConnectionError):
            await refused.start()
        await refused.stop()
        broker.up()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition("outage", 0)])
            records = await consumer.getmany(timeout_ms=5000)
        finally:
            await consumer.stop()
        assert [r.value for rs in records.values() for r in rs] == [b"before"]
