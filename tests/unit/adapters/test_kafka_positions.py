"""How :func:`intentd.adapters.kafka.fetch_batches` positions a partition it cannot read
from, on a fake consumer: a new group starts at the log start; a committed position the
log no longer holds is counted and recovered before the consumer reads on, and kept
if the recovery fails (on a broker: tests/integration/test_retention_gap.py)."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import NoOffsetForPartitionError, OffsetOutOfRangeError
from prometheus_client import REGISTRY

from intentd.adapters.kafka import fetch_batches
from intentd.lifecycle.log_gaps import LogGap

TP = TopicPartition("unit.deposits.SRC", 3)


class FakeConsumer:
    """Raises ``error`` from ``getmany`` once; a log holding ``log_start .. log_end``."""

    def __init__(self, error: Exception | None, *, log_start: int = 550, log_end: int = 600):
        self.error = error
        self.log_start, self.log_end = log_start, log_end
        self.calls: list[str] = []
        self.assigned = {TP}

    async def getmany(self, *, timeout_ms: int, max_records: int | None) -> dict[Any, Any]:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return {TP: ["record"]}

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.log_start for tp in tps}

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.log_end for tp in tps}

    def assignment(self) -> set[TopicPartition]:
        return self.assigned

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.calls.append(f"seek {tp.partition} {offset}")

    async def commit(self, positions: dict[TopicPartition, int]) -> None:
        self.calls += [f"commit {tp.partition} {offset}" for tp, offset in positions.items()]


def out_of_range(position: int) -> OffsetOutOfRangeError:
    return OffsetOutOfRangeError({TP: position})


def gaps_counted() -> float:
    labels = {"topic": TP.topic, "partition": str(TP.partition)}
    found = REGISTRY.get_sample_value("intentd_kafka_offset_out_of_range_total", labels)
    return found or 0.0


class Recovery:
    def __init__(self, consumer: FakeConsumer, *, fail: bool = False) -> None:
        self.consumer = consumer
        self.fail = fail
        self.gaps: list[LogGap] = []

    async def __call__(self, gap: LogGap) -> None:
        self.consumer.calls.append(f"recover {gap.position}..{gap.log_start}")
        self.gaps.append(gap)
        if self.fail:
            raise RuntimeError("chain down")


async def test_a_partition_the_group_never_committed_starts_at_the_log_start() -> None:
    """Once ``recover`` has seen it: a new group has nothing to recover, but a group
    whose committed offsets expired (or that was renamed) skipped what retention deleted."""
    consumer = FakeConsumer(NoOffsetForPartitionError(TP))
    recovery = Recovery(consumer)
    before = gaps_counted()
    assert await fetch_batches(consumer, timeout_ms=1, recover=recovery) == {}  # type: ignore[arg-type]
    assert recovery.gaps == [LogGap(TP.topic, 3, 0, 550, 600, uncommitted=True)]
    assert consumer.calls == ["recover 0..550", "seek 3 550", "commit 3 550"]
    assert gaps_counted() == before
    assert await fetch_batches(consumer, timeout_ms=1, recover=recovery) == {TP: ["record"]}  # type: ignore[arg-type]


async def test_a_position_below_the_log_start_is_counted_and_recovered_before_reading_on() -> None:
    consumer = FakeConsumer(out_of_range(5))
    recovery = Recovery(consumer)
    before = gaps_counted()
    assert await fetch_batches(consumer, timeout_ms=1, recover=recovery) == {}  # type: ignore[arg-type]
    assert recovery.gaps == [LogGap(TP.topic, 3, 5, 550, 600)]
    assert consumer.calls == ["recover 5..550", "seek 3 550", "commit 3 550"]  # no gap at a rejoin
    assert gaps_counted() == before + 1


async def test_a_failed_recovery_keeps_the_position() -> None:
    consumer = FakeConsumer(out_of_range(5))
    recovery = Recovery(consumer, fail=True)
    with pytest.raises(RuntimeError, match="chain down"):
        await fetch_batches(consumer, timeout_ms=1, recover=recovery)  # type: ignore[arg-type]
    assert consumer.calls == ["recover 5..550"]  # no seek: the gap is found again


async def test_a_stale_out_of_range_answer_reads_again_from_the_same_position() -> None:
    consumer = FakeConsumer(out_of_range(560))
    recovery = Recovery(consumer)
    before = gaps_counted()
    assert await fetch_batches(consumer, timeout_ms=1, recover=recovery) == {}  # type: ignore[arg-type]
    assert consumer.calls == ["seek 3 560"]
    assert gaps_counted() == before and recovery.gaps == []


async def test_a_partition_a_rebalance_took_during_the_recovery_is_left_to_its_new_owner() -> None:
    consumer = FakeConsumer(out_of_range(5))

    async def recover_while_revoked(gap: LogGap) -> None:
        consumer.calls.append("recover")
        consumer.assigned = set()

    await fetch_batches(consumer, timeout_ms=1, recover=recover_while_revoked)  # type: ignore[arg-type]
    assert consumer.calls == ["recover"]  # no seek: the new owner finds the gap and recovers
