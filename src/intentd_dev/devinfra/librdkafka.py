"""A ctypes binding to the few librdkafka calls that run its mock cluster.

The library is the one bundled in the confluent-kafka wheel
(``confluent_kafka.libs/librdkafka-*.so*``); nothing here imports confluent_kafka itself.
"""

import ctypes
import importlib.util
from pathlib import Path
from typing import Final

RD_KAFKA_PRODUCER: Final = 0
ERR_NO_ERROR: Final = 0
ERR_TOPIC_ALREADY_EXISTS: Final = 36
_ERRSTR_SIZE: Final = 512
# Syslog levels: 3 = error. The idle handle that hosts the cluster has no bootstrap.servers
# and would otherwise warn about it.
_LOG_LEVEL: Final = b"3"


class LibrdkafkaError(Exception):
    """librdkafka refused a call; the message is its own."""


def library_path() -> Path:
    """The librdkafka shared object shipped with the installed confluent-kafka wheel."""
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or spec.origin is None:
        raise LibrdkafkaError("confluent-kafka is not installed (pip install -e '.[dev]')")
    libs = Path(spec.origin).parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka-*.so*"))
    if not found:
        raise LibrdkafkaError(f"no librdkafka-*.so* in {libs}")
    return found[0]


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures: dict[str, tuple[list[type], type | None]] = {
        "rd_kafka_conf_new": ([], vp),
        "rd_kafka_conf_set": ([vp, cp, cp, cp, ctypes.c_size_t], i),
        "rd_kafka_conf_destroy": ([vp], None),
        "rd_kafka_new": ([i, vp, cp, ctypes.c_size_t], vp),
        "rd_kafka_destroy": ([vp], None),
        "rd_kafka_err2str": ([i], cp),
        "rd_kafka_mock_cluster_new": ([vp, i], vp),
        "rd_kafka_mock_cluster_destroy": ([vp], None),
        "rd_kafka_mock_cluster_bootstraps": ([vp], cp),
        "rd_kafka_mock_topic_create": ([vp, cp, i, i], i),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": ([vp, ctypes.c_int32], None),
        "rd_kafka_mock_broker_set_down": ([vp, ctypes.c_int32], i),
        "rd_kafka_mock_broker_set_up": ([vp, ctypes.c_int32], i),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = restype
    return lib


class MockCluster:
    """librdkafka's in-process mock Kafka cluster, listening on 127.0.0.1.

    The cluster runs on librdkafka's own threads; every method may be called from any
    thread. Call `close` once; after it the object is unusable.
    """

    def __init__(self, brokers: int = 1, library: Path | None = None) -> None:
        self._lib = _load(library or library_path())
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        conf = self._lib.rd_kafka_conf_new()
        if self._lib.rd_kafka_conf_set(conf, b"log_level", _LOG_LEVEL, errstr, _ERRSTR_SIZE):
            self._lib.rd_kafka_conf_destroy(conf)
            raise LibrdkafkaError(errstr.value.decode())
        # On success rd_kafka_new owns conf; on failure it is still ours.
        handle: int | None = self._lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)
        if not handle:
            self._lib.rd_kafka_conf_destroy(conf)
            raise LibrdkafkaError(errstr.value.decode())
        cluster: int | None = self._lib.rd_kafka_mock_cluster_new(handle, brokers)
        if not cluster:
            self._lib.rd_kafka_destroy(handle)
            raise LibrdkafkaError("rd_kafka_mock_cluster_new failed")
        self._handle: int = handle
        self._cluster: int = cluster

    @property
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port...]`` of the mock brokers."""
        raw: bytes = self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster)
        return raw.decode()

    def create_topic(self, name: str, partitions: int, replication: int = 1) -> int:
        """Create a topic; returns librdkafka's error code (0, or e.g. TOPIC_ALREADY_EXISTS)."""
        code: int = self._lib.rd_kafka_mock_topic_create(
            self._cluster, name.encode(), partitions, replication
        )
        return code

    def set_initial_rebalance_delay(self, milliseconds: int) -> None:
        """Like the broker's group.initial.rebalance.delay.ms (the mock's default is 3000)."""
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._cluster, milliseconds)

    def set_broker_down(self, broker_id: int) -> int:
        """Cut every connection of broker ``broker_id`` (1-based) and refuse new ones, as a
        broker that went away would; librdkafka's error code (0 on success)."""
        code: int = self._lib.rd_kafka_mock_broker_set_down(self._cluster, broker_id)
        return code

    def set_broker_up(self, broker_id: int) -> int:
        """Accept connections to broker ``broker_id`` again; librdkafka's error code."""
        code: int = self._lib.rd_kafka_mock_broker_set_up(self._cluster, broker_id)
        return code

    def error_text(self, code: int) -> str:
        raw: bytes = self._lib.rd_kafka_err2str(code)
        return raw.decode()

    def close(self) -> None:
        """Stop the brokers, then destroy the handle that hosted them."""
        self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
        self._lib.rd_kafka_destroy(self._handle)
