"""When a recorded deposit's block is still canonical, final, or orphaned; which decoded
transfer is the same one mined again."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from intentd.chain.evm.finality import Verdict, find_again, judge
from intentd.chain.transfers import ChainTransfer
from intentd.domain.deposits import Deposit

A, B = "0x" + "a" * 64, "0x" + "b" * 64
TX = "0x" + "c" * 64
TO, TOKEN = "0x" + "1" * 40, "0x" + "2" * 40


def recorded(*, transfer_index: int | None) -> Deposit:
    """The deposit as recorded: 7 of TOKEN to TO, log 0 of its old block."""
    return Deposit(
        chain="C", tx_hash=TX, log_index=0, block_number=1, block_hash=A,
        block_time=datetime(2026, 1, 1, tzinfo=UTC), token=TOKEN, from_address=TO,
        to_address=TO, amount=7, transfer_index=transfer_index,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("canonical", "block", "latest", "expected"),
    [
        (A, 100, 100, Verdict.CANONICAL),
        (A, 100, 107, Verdict.CANONICAL),
        (A, 100, 108, Verdict.FINAL),
        (A.upper().replace("0X", "0x"), 100, 200, Verdict.FINAL),
        (B, 100, 101, Verdict.ORPHANED),
        (B, 100, 500, Verdict.ORPHANED),  # orphaned is orphaned, however deep
        # No block at that height: a node that lags (a load-balanced backend, a failover)
        # or a shorter new branch. Nothing is decided on it; a lagging node must not
        # un-credit a real payment.
        (None, 100, 99, Verdict.UNSEEN),
        (None, 100, 300, Verdict.UNSEEN),
    ],
)
def test_judge(canonical: str | None, block: int, latest: int, expected: Verdict) -> None:
    assert judge(A, canonical, block_number=block, latest=latest, final_depth=8) is expected


def test_judge_needs_a_positive_depth() -> None:
    with pytest.raises(ValueError, match="final_depth"):
        judge(A, A, block_number=1, latest=1, final_depth=0)


def deposit(**changes: object) -> ChainTransfer:
    fields: dict[str, object] = {
        "block_number": 101, "block_hash": B, "block_time": 5, "tx_hash": TX, "tx_index": 0,
        "log_index": 0, "token": TOKEN, "from_address": TO, "to_address": TO, "amount": 7,
        "transfer_index": 0,
    }  # fmt: skip
    fields.update(changes)
    return ChainTransfer(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([deposit()], 0),
        ([deposit(transfer_index=1), deposit(log_index=9)], 1),  # the log moved in its block
        ([deposit(amount=6)], None),
        ([deposit(token="0x" + "3" * 40)], None),
        ([deposit(to_address="0x" + "4" * 40)], None),
        ([deposit(tx_hash="0x" + "d" * 64)], None),
        ([deposit(transfer_index=1)], None),
        ([], None),
    ],
)
def test_find_again_by_identity(found: list[ChainTransfer], expected: int | None) -> None:
    again = find_again(found, recorded(transfer_index=0))
    assert again is (None if expected is None else found[expected])


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ([deposit(transfer_index=3)], 0),  # a record made before identities: its log index
        ([deposit(log_index=1)], None),
    ],
)
def test_find_again_of_a_record_without_identity(
    found: list[ChainTransfer], expected: int | None
) -> None:
    again = find_again(found, recorded(transfer_index=None))
    assert again is (None if expected is None else found[expected])
