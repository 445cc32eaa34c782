"""The proof that log answers are whole (``chain.evm.coverage``) and the poller's account
of failed reads (``indexer.read_failures``)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer, address

from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.coverage import LogsAnswer, UnprovenLogs, proven_logs
from intentd.indexer.read_failures import ReadFailures


def busy(blocks: int = 12) -> FakeChain:
    chain = FakeChain()
    for n in range(1, blocks + 1):
        chain.mine(Transfer(address(n), n, token=USDC))
    return chain


def hashes(chain: FakeChain) -> dict[int, str]:
    return {int(b["number"], 16): b["hash"] for b in chain.blocks}


def answered(chain: FakeChain, blocks: BlockRange, anchor: int | None = None) -> LogsAnswer:
    at = blocks.last if anchor is None else anchor
    anchor_hash = chain.blocks[at]["hash"]
    return LogsAnswer(blocks, chain.logs(blocks.first, blocks.last), at, (anchor_hash, anchor_hash))


def test_answers_anchored_at_our_blocks_give_their_logs_in_order() -> None:
    chain = busy()
    answers = [answered(chain, BlockRange(1, 4), 12), answered(chain, BlockRange(5, 12))]
    logs = proven_logs(answers, hashes(chain), covering=BlockRange(1, 12))
    assert logs == chain.logs(1, 12)


def test_an_answer_from_a_node_whose_anchor_is_another_block_is_unproven() -> None:
    chain = busy()
    ours = hashes(chain)
    answer = answered(chain, BlockRange(1, 12))
    for seen in [("0x" + "e" * 64, ours[12]), (ours[12], "0x" + "e" * 64), ()]:
        lying = LogsAnswer(answer.blocks, answer.logs, 12, seen)
        with pytest.raises(UnprovenLogs):
            proven_logs([lying], ours)


def test_a_node_that_cut_its_answer_at_its_head_is_caught_by_the_anchor_alone() -> None:
    # The logs themselves are all ours and consistent: only the anchor tells.
    chain = busy()
    ours = hashes(chain)
    cut = LogsAnswer(BlockRange(1, 12), chain.logs(1, 9), 12, ("0x" + "e" * 64,) * 2)
    with pytest.raises(UnprovenLogs):
        proven_logs([cut], ours)


@pytest.mark.parametrize(
    ("change", "msg"),
    [
        ({"blockNumber": hex(13)}, "in the answer for"),  # outside the range asked
        ({"blockHash": "0x" + "d" * 64}, "another fork"),
        ({"removed": True}, "another fork"),
    ],
)
def test_a_log_that_does_not_belong_is_an_inconsistency(change: dict[str, Any], msg: str) -> None:
    chain = busy()
    answer = answered(chain, BlockRange(1, 12))
    answer.logs[3] = {**answer.logs[3], **change}
    with pytest.raises(InconsistentAnswer, match=msg):
        proven_logs([answer], hashes(chain))


def test_a_log_of_a_block_not_read_and_an_unread_anchor_are_inconsistencies() -> None:
    chain = busy()
    known = {n: h for n, h in hashes(chain).items() if n != 4}
    with pytest.raises(InconsistentAnswer, match="not read"):
        proven_logs([answered(chain, BlockRange(1, 12))], known)
    with pytest.raises(InconsistentAnswer, match="unread block"):
        proven_logs([answered(chain, BlockRange(1, 4))], known)
    with pytest.raises(InconsistentAnswer, match="unread block"):  # anchored below its range
        proven_logs([answered(chain, BlockRange(1, 12), 11)], hashes(chain))


@given(st.lists(st.integers(1, 12), max_size=4, unique=True))
def test_answers_must_cover_exactly_the_range_asked(cuts: list[int]) -> None:
    chain = busy()
    edges = sorted({0, *cuts, 12})
    parts = [BlockRange(a + 1, b) for a, b in itertools.pairwise(edges) if b > a]
    answers = [answered(chain, part, 12) for part in parts]
    assert proven_logs(answers, hashes(chain), covering=BlockRange(1, 12)) == chain.logs(1, 12)
    for dropped in range(len(answers)):
        gap = answers[:dropped] + answers[dropped + 1 :]
        with pytest.raises(InconsistentAnswer, match="do not cover"):
            proven_logs(gap, hashes(chain), covering=BlockRange(1, 12))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_logs_its_start_a_summary_a_minute_and_its_end() -> None:
    clock = Clock()
    failures = ReadFailures("FAILCHAIN", base=0.5, cap=4.0, clock=clock)
    with capture_logs() as logs:
        delays = []
        for _ in range(200):  # 200 failed reads over 100 s
            delays.append(failures.failed("unavailable", "down", "5.."))
            clock.now += 0.5
        failures.succeeded()
        failures.succeeded()  # nothing more to say
    assert delays[:4] == [0.5, 1.0, 2.0, 4.0] and max(delays) == 4.0
    assert [(e["log_level"], e["event"]) for e in logs] == [
        ("warning", "chain read failed; reading the same blocks again"),
        ("error", "chain reads still failing; the poller waits at these blocks"),
        ("info", "chain reads recovered"),
    ]
    assert logs[1]["reasons"] == {"unavailable": 121} and logs[2]["seconds"] == 100.0
    assert failures.count == 0
    assert failures.failed("inconsistent", "torn", "9..") == 0.5  # a new outage starts over
