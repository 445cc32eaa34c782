"""The chaos run at CI size: 16 intents dealt over the twelve scenarios (USDC and ETH)
paid while every role is killed with ``kill -9`` twice, the chains reorganise twice
(depth 1..5, the orphaned transactions re-included) and the ETH / USD feed moves four
times, within and beyond the slippage (the ETH intents are priced in USD and revalued at
their payments); then every recipient, relayer, fee account, refund address and intent
address is checked on chain to the base unit, against the figures recomputed from the
prices recorded with each credit, and the events.

It runs on two anvil chains, a database and a topic prefix of its own
(``bench/chaos``); the 10^4-deposit run is ``python -m bench chaos`` (docs/chaos.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.chaos.driver import PAYERS, Options, run
from bench.chaos.scenarios import payments, plans

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(400)
async def test_every_scenario_moves_the_right_money_under_kills_and_reorgs(
    infra: dict[str, str], tmp_path: Path
) -> None:
    options = Options(seed=13, intents=16, rate=4, kills_per_role=2, reorgs=2, expires_in=20)
    figures = await run(options, logs=tmp_path)
    print("\n" + figures.report())
    assert figures.intents == 16
    # top_up and eth_top_up pay twice, nothing_expiry never
    assert figures.deposits == sum(len(payments(p, 3)) for p in plans(13, 16, PAYERS))
    assert all(kills == 2 for kills in figures.kills.values()), figures.kills
    assert sum(figures.reorgs.values()) == 2
    # the ETH / USD feed moved within and beyond the slippage while ETH intents were paid
    assert [m.split()[0] for m in figures.price_moves] == ["within", "beyond"] * 2
    assert figures.revaluations["revalued"] > 0
    assert figures.unsettled == {}
    assert figures.mismatches == []
    assert figures.exits == [], "a role exited by itself"
