"""The action's one definition: its statuses and the table of allowed moves, and the
wire and settings values that must agree with its enums."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentd.domain import intent
from intentd.domain.actions import (
    ALLOWED_MOVES,
    INITIAL_STATUSES,
    NATIVE,
    ActionKind,
    ActionStatus,
    IllegalActionMove,
    ResultEvent,
    SignerKind,
    check_move,
    moves_into,
)
from intentd.messages import ActionResultMessage
from intentd.settings import NATIVE_TOKEN

statuses = st.sampled_from(list(ActionStatus))
TERMINAL = {ActionStatus.CONFIRMED, ActionStatus.FAILED, ActionStatus.CANCELLED}


def test_the_stored_values_are_the_ones_the_sql_and_the_lifecycle_write() -> None:
    assert {s.value for s in ActionStatus} == {
        "ready", "held", "submitted", "confirmed", "failed", "cancelled",
    }  # fmt: skip
    assert {s.value for s in SignerKind} == {"relayer", "gas_tank", "intent"}  # 0003 CHECK
    assert {k.value for k in ActionKind} == {
        "prefill", "relayer_refund", "fee_sweep", "user_refund",
    }  # fmt: skip


def test_every_status_has_a_row_and_the_terminal_ones_have_no_moves() -> None:
    assert set(ALLOWED_MOVES) == set(ActionStatus)
    assert {s for s, targets in ALLOWED_MOVES.items() if not targets} == TERMINAL
    assert {ActionStatus.READY, ActionStatus.HELD} == INITIAL_STATUSES


def test_every_status_is_reachable_from_a_new_action() -> None:
    seen, frontier = set(INITIAL_STATUSES), list(INITIAL_STATUSES)
    while frontier:
        for target in ALLOWED_MOVES[frontier.pop()] - seen:
            seen.add(target)
            frontier.append(target)
    assert seen == set(ActionStatus)


def test_nothing_is_signed_for_a_held_or_cancelled_action() -> None:
    assert ActionStatus.SUBMITTED not in ALLOWED_MOVES[ActionStatus.HELD]
    assert ActionStatus.CANCELLED not in ALLOWED_MOVES[ActionStatus.SUBMITTED]


@given(statuses, statuses)
def test_check_move_allows_exactly_the_table(current: ActionStatus, target: ActionStatus) -> None:
    if target in ALLOWED_MOVES[current]:
        check_move(current, target)
    else:
        with pytest.raises(IllegalActionMove) as refused:
            check_move(current, target)
        assert str(current) in str(refused.value) and str(target) in str(refused.value)


@given(st.sampled_from(sorted(INITIAL_STATUSES)), st.lists(statuses, max_size=20))
def test_a_walk_of_legal_moves_never_leaves_a_terminal_status(
    start: ActionStatus, tries: list[ActionStatus]
) -> None:
    current = start
    for target in tries:
        try:
            check_move(current, target)
        except IllegalActionMove:
            continue
        assert current not in TERMINAL
        current = target


@given(statuses, st.lists(statuses, max_size=6))
def test_moves_into_binds_the_sources_only_when_all_may_move(
    target: ActionStatus, sources: list[ActionStatus]
) -> None:
    if all(target in ALLOWED_MOVES[s] for s in sources):
        assert moves_into(target, sources) == [s.value for s in sources]
    else:
        with pytest.raises(IllegalActionMove):
            moves_into(target, sources)


def test_the_wire_literals_are_the_enums() -> None:
    fields = ActionResultMessage.model_fields
    assert set(get_args(fields["action_kind"].annotation)) == {k.value for k in ActionKind}
    assert set(get_args(fields["event"].annotation)) == {e.value for e in ResultEvent}


def test_one_native_pseudo_address() -> None:
    assert NATIVE == NATIVE_TOKEN.lower() == intent.NATIVE
    assert intent.SignerKind is SignerKind and intent.ActionKind is ActionKind
