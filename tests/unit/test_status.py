"""The state table: every move is either allowed or raises naming both states."""

from __future__ import annotations

import itertools

import pytest

from intentd.domain.status import (
    ALLOWED_MOVES,
    FundingStatus,
    IllegalTransition,
    IntentStatus,
    check_move,
    funding_status,
)

TERMINAL = {
    IntentStatus.COMPLETED,
    IntentStatus.EXPIRED,
    IntentStatus.REFUNDED,
    IntentStatus.CANCELLED,
}


@pytest.mark.parametrize(("current", "target"), list(itertools.product(IntentStatus, IntentStatus)))
def test_every_pair_is_decided_by_the_table(current: IntentStatus, target: IntentStatus) -> None:
    if target in ALLOWED_MOVES[current]:
        check_move(current, target)
    else:
        with pytest.raises(IllegalTransition, match=f"from {current} to {target}"):
            check_move(current, target)


def test_terminal_states_have_no_way_out() -> None:
    assert all(not ALLOWED_MOVES[s] for s in TERMINAL)


def test_every_state_is_reachable_from_pending() -> None:
    seen, frontier = {IntentStatus.PENDING}, [IntentStatus.PENDING]
    while frontier:
        for nxt in ALLOWED_MOVES[frontier.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert seen == set(IntentStatus)


@pytest.mark.parametrize(
    ("received", "total", "expected"),
    [
        (0, 10, FundingStatus.NONE),
        (1, 10, FundingStatus.UNDERFUNDED),
        (9, 10, FundingStatus.UNDERFUNDED),
        (10, 10, FundingStatus.EXACT),
        (11, 10, FundingStatus.OVERFUNDED),
    ],
)
def test_funding_status(received: int, total: int, expected: FundingStatus) -> None:
    assert funding_status(received, total) is expected


def test_funding_status_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="positive"):
        funding_status(1, 0)
    with pytest.raises(ValueError, match="negative"):
        funding_status(-1, 1)
