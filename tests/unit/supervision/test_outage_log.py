"""An outage is told in a few lines, however many failures and retries it holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from intentd.supervision import POSTGRESQL, rpc
from intentd.supervision.outage_log import OutageLog


def test_the_first_failure_summaries_and_the_end_are_all_it_says() -> None:
    outages = OutageLog(rpc("BASE"), summary_every=30)
    first = outages.failed(100.0, "RpcTransportError: reset", task="poll:BASE")
    assert first is not None and first.level == "warning"
    assert first.event == "dependency unavailable"
    assert first.fields == {
        "dependency": "rpc", "chain": "BASE", "error": "RpcTransportError: reset",
        "task": "poll:BASE",
    }  # fmt: skip
    for t in range(101, 130):
        assert outages.failed(float(t), "again") is None
        assert outages.still(float(t)) is None
    summary = outages.still(130.0)
    assert summary is not None and summary.event == "dependency still unavailable"
    assert summary.fields["down_seconds"] == 30.0 and summary.fields["failures"] == 30
    assert outages.still(131.0) is None
    end = outages.answered(145.5)
    assert end is not None and end.level == "info" and end.event == "dependency available again"
    assert end.fields["outage_seconds"] == 45.5 and end.fields["failures"] == 30
    assert not outages.down and outages.seconds(146.0) == 0.0
    assert outages.answered(146.0) is None  # up already: nothing to say
    assert outages.outages == 1


@given(
    st.lists(
        st.tuples(st.floats(0, 5, allow_nan=False), st.sampled_from(["fail", "answer", "tick"])),
        max_size=300,
    )
)
def test_lines_are_bounded_by_outages_and_their_duration(
    steps: list[tuple[float, str]],
) -> None:
    outages = OutageLog(POSTGRESQL, summary_every=30)
    now, lines, down_time, started = 0.0, 0, 0.0, None
    for gap, step in steps:
        now += gap
        if step == "fail":
            line = outages.failed(now, "refused")
            if started is None:
                started = now
        elif step == "answer":
            line = outages.answered(now)
            if started is not None:
                down_time += now - started
                started = None
        else:
            line = outages.still(now)
        lines += line is not None
    if started is not None:
        down_time += now - started
    assert lines <= 2 * outages.outages + down_time / 30 + 1e-9
