"""The relayer's balance read from a node behind its payments is not stored; tick after
tick that is one line when it starts (a summary every 30 s), one when a reading is
stored again: not a warning per read."""

from __future__ import annotations

from tests.log_capture import own_logs
from tests.unit.execution.test_executor_on_fakes import KEYS, chain_config
from tests.unit.execution.test_prefill_funds_on_fakes import USDC, funded

from intentd.domain.actions import ActionStatus
from intentd.execution.float_report import FloatReport
from intentd.settings import LiquidityConfig

BEHIND = (
    "the relayer's balance came from a node behind its confirmed payments; the float is not stored"
)


async def test_reads_from_a_lagging_node_are_one_line_then_one_when_stored_again() -> None:
    h = funded(USDC)
    first = h.prefill(USDC)
    await h.tick()
    await h.tick(mine=2)
    assert h.store.row(first).status is ActionStatus.CONFIRMED
    report = FloatReport(
        chain_config(), LiquidityConfig(), store=h.store, reader=h.writer, keyring=KEYS
    )
    h.writer.behind = lambda: 2  # every read lands on a node below the confirmed payment
    with own_logs() as logs:
        for _ in range(10):  # one each liquidity.read_interval
            assert not await report.refresh()
        h.writer.behind = lambda: 0
        assert await report.refresh()
    told = [(entry["event"], entry["log_level"]) for entry in logs if "float" in entry["event"]]
    assert told == [(BEHIND, "warning"), ("the relayer's float is stored again", "info")]
