"""The demo (``python -m intentd_dev.demo``) as ``make demo`` runs it, on resources of
this test alone: ``intentd run`` with a webhook key delivers every event of the demo's
intents to the demo merchant's receiver, each signature verified by
``standardwebhooks``, as many as the webhooks role recorded; the demo deletes its
endpoint at the end, and prints the console's address and a sign-in link of the demo's
owner, whose client holds the demo's payments."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from tests.e2e.demo_process import start_demo

from intentd.access.tokens import token_hash
from intentd.adapters.postgres import Pool
from intentd.settings import Settings
from intentd_dev.contract_check import check_event

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(300)
async def test_demo_merchant_receives_every_event_signed(
    own_stack: tuple[Settings, Pool], tmp_path: Path
) -> None:
    settings, pool = own_stack
    log = tmp_path / "daemon.log"
    demo = await start_demo(settings, log)
    out, _ = await asyncio.wait_for(demo.communicate(), 280)
    text = out.decode()
    daemon_log = log.read_text() if log.exists() else ""
    assert demo.returncode == 0, text + daemon_log[-5000:]
    received = re.search(r"the merchant received all (\d+) events of its intents as webhooks", text)
    assert received is not None, text
    assert "every signature valid (standardwebhooks; " in text, text
    for step in ("intent_funded", "intent_initiated", "intent_completed", "intent_refunded"):
        assert f"webhook {step} intent #" in text, text
    assert "funding EXACT" in text and "funding OVERFUNDED" in text, text
    assert "whsec_" not in text + daemon_log  # the endpoint's secret is never printed

    # Every event the webhooks role recorded for the demo's intents reached the merchant,
    # and every body sent (the bytes the webhooks role signs) and every event the lifecycle
    # logged matches the AsyncAPI document (docs/asyncapi.json).
    recorded = await pool.fetchval("SELECT count(*) FROM webhook_events WHERE intent_id > 0")
    assert int(received.group(1)) == recorded >= 10
    bodies = await pool.fetch("SELECT body FROM webhook_events WHERE intent_id > 0")
    logged = await pool.fetch("SELECT body FROM intent_events")
    assert len(logged) >= len(bodies) == recorded
    for row in [*bodies, *logged]:
        check_event(row["body"])
    assert await pool.fetchval("SELECT count(*) FROM webhook_endpoints") == 0

    # It ends with the console's address and a sign-in link of the demo's owner, whose
    # client holds the demo's payments.
    console = re.search(r"merchant console: (http://\S+)/console\n", text)
    assert console is not None, text
    link = re.search(r"(http://\S+/console/signin#link=(\S+))", text)
    assert link is not None, text
    assert link.group(1).startswith(console.group(1))
    owner = await pool.fetchrow(
        "SELECT u.role, u.client_id FROM console_users u JOIN console_signin_links l"
        " ON l.user_id = u.id WHERE l.token_hash = $1 AND l.used_at IS NULL",
        token_hash(link.group(2)),
    )
    assert owner is not None
    assert owner["role"] == "owner"
    demo_intents = await pool.fetchval(
        "SELECT count(*) FROM intents WHERE client_id = $1", owner["client_id"]
    )
    assert demo_intents == 3
