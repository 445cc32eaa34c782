"""A condition seen at every attempt is told in a few lines: when it begins, a summary
every interval while it lasts, when it ends; however many attempts it holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from intentd.supervision.episodes import Episodes, Wording

WORDING = Wording(begun="waits", lasting="still waits", ended="waited", level="error")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_condition_is_a_first_line_summaries_and_a_last_line() -> None:
    clock = Clock()
    episodes: Episodes[str] = Episodes(WORDING, summary_every=30, clock=clock)
    first = episodes.seen("a", nonce=1, reason="r1")
    assert first is not None and (first.level, first.event) == ("error", "waits")
    assert first.fields == {"nonce": 1, "reason": "r1"}
    said = []
    for second in range(1, 61):
        clock.now = float(second)
        line = episodes.seen("a", nonce=1, reason=f"r{second}")
        if line is not None:
            said.append((line.event, line.fields))
    assert said == [
        ("still waits", {"nonce": 1, "reason": "r30", "seconds": 30.0, "times": 31}),
        ("still waits", {"nonce": 1, "reason": "r60", "seconds": 60.0, "times": 61}),
    ]
    clock.now = 61.5
    last = episodes.ended("a", verdict="final")
    assert last is not None and (last.level, last.event) == ("info", "waited")
    assert last.fields == {
        "nonce": 1, "reason": "r60", "verdict": "final", "seconds": 61.5, "times": 61
    }  # fmt: skip
    assert episodes.ended("a") is None and "a" not in episodes


def test_without_summaries_the_first_line_stands_for_the_whole() -> None:
    episodes: Episodes[str] = Episodes(WORDING, summary_every=None, clock=Clock())
    assert episodes.seen("url") is not None
    assert all(episodes.seen("url") is None for _ in range(1000))


def test_those_no_longer_asked_about_end() -> None:
    episodes: Episodes[int] = Episodes(WORDING, clock=Clock())
    for key in (1, 2, 3):
        episodes.seen(key, n=key)
    lines = episodes.keep([2], verdict="gone")
    assert sorted((line.fields["n"], line.fields["verdict"]) for line in lines) == [
        (1, "gone"), (3, "gone")
    ]  # fmt: skip
    assert len(episodes) == 1 and 2 in episodes


@given(
    st.lists(
        st.tuples(st.floats(0, 5, allow_nan=False), st.sampled_from(["a", "b"]), st.booleans()),
        max_size=300,
    )
)
def test_lines_are_bounded_by_episodes_and_their_duration(
    steps: list[tuple[float, str, bool]],
) -> None:
    clock = Clock()
    episodes: Episodes[str] = Episodes(WORDING, summary_every=30, clock=clock)
    lines, begun, lasted, since = 0, 0, 0.0, {}
    for gap, key, seen in steps:
        clock.now += gap
        if seen:
            if key not in since:
                since[key] = clock.now
                begun += 1
            lines += episodes.seen(key) is not None
        else:
            if key in since:
                lasted += clock.now - since.pop(key)
            lines += episodes.ended(key) is not None
    lasted += sum(clock.now - at for at in since.values())
    assert lines <= 2 * begun + lasted / 30 + 1e-9
