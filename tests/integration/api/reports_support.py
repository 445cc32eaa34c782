"""Helpers of the reports' API tests: intents paid and settled on real PostgreSQL by the
lifecycle's own handlers, with a stand-in for the executor that writes what the executor
writes (a signed transfer, a gas top-up for an intent address's token sweep, the
receipt's figures, the action confirmed) and reports it to the lifecycle.

The chains are not touched: the reports read only what intentd recorded. The end-to-end
version on anvil, with the real executor, is tests/e2e/test_reports_chain.py.
"""

from __future__ import annotations

import csv
import io
import itertools
import secrets
from datetime import UTC, datetime
from typing import Any

from tests.integration.api.conftest import Api
from tests.lifecycle_calls import apply_action_result

from intentd.adapters.evm.signer import sign
from intentd.adapters.postgres import Pool
from intentd.domain.actions import Action, ActionKind, SignerKind
from intentd.execution.gas import Fees
from intentd.execution.tx_plans import Purpose, TxPlan, transfer_tx
from intentd.messages import ActionResultMessage, action_result_id

GAS_USED, PRICE = 50_000, 2 * 10**9
FEES = Fees(3 * 10**9, 10**8)
GAS_TANK = "0x" + "7" * 40
KEY = b"\x01" * 32
"""Signs the stand-in's transactions (the signer recorded is the one the executor would
have used; the reports read the recorded signer, not the signature)."""
_nonces = itertools.count(1)


async def settle(api: Api, pool: Pool, intent_id: int) -> None:
    """Execute every ready action of the intent, and those its results create, to the end."""
    while True:
        rows = await pool.fetch(
            "SELECT a.*, i.intent_address FROM actions a JOIN intents i ON i.id = a.intent_id"
            " WHERE a.intent_id = $1 AND a.status = 'ready' ORDER BY a.id",
            intent_id,
        )
        if not rows:
            return
        for row in rows:
            await execute(api, pool, row)


async def execute(api: Api, pool: Pool, row: Any) -> str:
    """What the executor records for one action, then the results it sends."""
    chain = api.settings.chains[row["chain"]]
    action = Action(
        id=row["id"],
        intent_id=row["intent_id"],
        kind=ActionKind(row["kind"]),
        chain=row["chain"],
        token=row["token"],
        amount=int(row["amount"]),
        to_address=row["to_address"],
        signer_kind=SignerKind(row["signer_kind"]),
        signer_index=row["signer_index"],
        gas_from_amount=row["gas_from_amount"],
        attempts=0,
    )
    plan = transfer_tx(action, 65_000, FEES)
    relayer = action.signer_kind is SignerKind.RELAYER
    signer = chain.relayer.lower() if relayer else row["intent_address"]
    async with pool.acquire() as conn, conn.transaction():
        if not relayer and not action.native:
            topup = TxPlan(Purpose.GAS_TOPUP, row["intent_address"], 10**15, b"", 21_000, FEES)
            await _record(conn, action, topup, GAS_TANK, chain.chain_id)
        tx_hash = await _record(conn, action, plan, signer, chain.chain_id)
        gas_cost = GAS_USED * PRICE
        await conn.execute(
            "UPDATE actions SET status = 'confirmed', tx_hash = $2, amount_sent = $3,"
            " gas_cost = $4, updated_at = now() WHERE id = $1",
            action.id,
            tx_hash,
            plan.value if action.native else action.amount,
            gas_cost,
        )
    events = ["sent", "confirmed"] if action.kind is ActionKind.PREFILL else ["confirmed"]
    for event in events:
        message = ActionResultMessage(
            id=action_result_id(action.id, event),
            action_id=action.id,
            intent_id=action.intent_id,
            action_kind=action.kind.value,
            event=event,  # type: ignore[arg-type]
            chain=action.chain,
            tx_hash=tx_hash,
            block_number=100 if event == "confirmed" else None,
            amount_sent=(plan.value if action.native else action.amount)
            if event == "confirmed"
            else None,
            gas_cost=gas_cost if event == "confirmed" else None,
        )
        async with pool.acquire() as conn:
            await apply_action_result(conn, api.settings, message, now=datetime.now(UTC))
    return tx_hash


async def _record(conn: Any, action: Action, plan: TxPlan, signer: str, chain_id: int) -> str:
    signed = sign(plan, chain_id=chain_id, nonce=next(_nonces), private_key=KEY)
    await conn.execute(
        """
        INSERT INTO chain_transactions (action_id, purpose, chain, signer, nonce, tx_hash,
               raw_tx, to_address, value, gas_limit, max_fee_per_gas, max_priority_fee_per_gas,
               status, block_number, block_hash, gas_used, effective_gas_price)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'confirmed', 100, $13, $14,
                $15)
        """,
        action.id,
        plan.purpose.value,
        action.chain,
        signer,
        next(_nonces),
        signed.tx_hash,
        signed.raw,
        plan.to,
        plan.value,
        plan.gas_limit,
        plan.fees.max_fee_per_gas,
        plan.fees.max_priority_fee_per_gas,
        "0x" + secrets.token_hex(32),
        GAS_USED,
        PRICE,
    )
    return signed.tx_hash


async def csv_rows(
    api: Api, key: str, path: str, **params: str
) -> tuple[int, list[dict[str, str]], Any]:
    """(status, rows as dicts by the header, the problem or the response headers)."""
    async with api.http.get(
        f"{api.url}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}, params=params
    ) as response:
        body = await response.read()
        if response.status != 200:
            import orjson

            return response.status, [], orjson.loads(body)
        text = body.decode()
        return 200, list(csv.DictReader(io.StringIO(text, newline=""))), response.headers
