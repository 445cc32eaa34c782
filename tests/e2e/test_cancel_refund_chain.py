"""A cancelled intent with a partial payment gets its money back on chain, end to end.

``intentd run`` (pollers, lifecycle, executors, API) on the two anvil chains: an intent
is created and partly paid, the merchant cancels it over HTTP, then the payer sends
the rest anyway (a late deposit). Both amounts arrive back at ``refund_address`` to
the base unit, the intent ends REFUNDED with one terminal ``intent_refunded`` (reason
``cancelled``), and the relayer is never involved (no prefill, so the shared relayer's
balance is not asserted).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from eth_account import Account
from tests.e2e.chain_run import SOURCE, UNIT, five_usdc, running_on_chains
from tests.support import TopicReader, balance, json_values, send_payments

from intentd.adapters.postgres import Pool
from intentd.domain.events import is_terminal
from intentd.messages import events_topic
from intentd.settings import Settings

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(300)
async def test_a_cancelled_partly_paid_intent_is_refunded_on_chain(
    own_stack: tuple[Settings, Pool], infra: dict[str, str], tmp_path: Path
) -> None:
    settings, pool = own_stack
    src_rpc = infra[f"INTENTD_{SOURCE}_RPC_URL"]
    usdc = infra[f"INTENTD_{SOURCE}_USDC"]
    payer_key = Path(infra["INTENTD_DEV_PAYER_KEY_FILE"]).read_text().strip()
    log = tmp_path / "daemon.log"
    async with running_on_chains(settings, pool, log, api=True) as run:
        key = run.shop_key("cancel-shop")
        headers = {"Authorization": f"Bearer {key}"}
        refund_to = str(Account.create().address)
        async with aiohttp.ClientSession(headers=headers) as http:
            record = await run.create_intent(http, five_usdc(usdc, refund_address=refund_to))
            address = record["intent_address"]
            await asyncio.to_thread(send_payments, src_rpc, payer_key, [(usdc, address, 3 * UNIT)])
            await run.until_credited(record, "the part payment credited")
            async with http.post(f"{run.api}/intents/{address}/cancel") as response:
                cancelled = await response.json()
                assert (response.status, cancelled["intent_status"]) == (200, "REFUNDING")
            # the payer sends the rest anyway: a late deposit, refunded too
            await asyncio.to_thread(send_payments, src_rpc, payer_key, [(usdc, address, 2 * UNIT)])
            await run.until(
                "SELECT count(*) = 2 FROM actions WHERE intent_id = $1 AND status = 'confirmed'",
                record["id"],
                timeout=90,
                what="both refunds confirmed",
            )
            await run.until_status(record, "REFUNDED", timeout=30)
            async with http.get(f"{run.api}/intents/{record['id']}") as response:
                final = await response.json()
        assert (final["intent_status"], final["amount_received"]) == ("REFUNDED", "3")
        assert balance(src_rpc, usdc, refund_to) == 5 * UNIT
        assert balance(src_rpc, usdc, address) == 0
        reasons = await pool.fetch(
            "SELECT kind, reason, amount FROM actions WHERE intent_id = $1 ORDER BY id",
            record["id"],
        )
        assert [(r["kind"], r["reason"], int(r["amount"])) for r in reasons] == [
            ("user_refund", "cancelled", 3 * UNIT),
            ("user_refund", "late_deposit", 2 * UNIT),
        ]
        async with TopicReader(
            settings.kafka.bootstrap_servers, events_topic(settings.kafka.topic_prefix)
        ) as reader:
            await reader.wait_for(lambda ms: len(ms) >= 3, timeout=30)
            await reader.drain(1.0)
        events = [e for e in json_values(reader.messages) if e["intent"]["id"] == record["id"]]
        seen = [(e["type"], e.get("data", {}).get("refund", {}).get("reason")) for e in events]
        assert sorted(seen[1:], key=str) == [
            ("intent_refunded", "cancelled"),
            ("intent_refunded", "late_deposit"),
        ]
        assert seen[0] == ("intent_funded", None)
        assert [s for s in seen if is_terminal(*s)] == [("intent_refunded", "cancelled")]
