"""When the chaos run has settled, and whether the chain and the events are right.

Settled: every payment sent is a recorded deposit, every intent is terminal, no action
is ``ready``, ``submitted`` or ``held``, no transaction of intentd is open and the outbox
is drained. Then every test-token balance the run touched is read on chain and compared,
to the base unit, with :func:`bench.chaos.scenarios.expected_changes`; the native
balance of the relayer, the gas tank and every intent address with what intentd's own
transaction records say moved (values and gas, ``gasUsed * effectiveGasPrice`` read from
the receipts): a transaction of theirs that intentd did not record, or recorded wrongly,
shows; for native (ETH) intents also every recipient's ETH and the gross each
account was paid (``native_scenario_mismatches``). Each intent's events must be gap-free
(1..n), with unique ids, and end with the terminal event its scenario allows (exactly
one terminal event); every event must match the AsyncAPI document (docs/asyncapi.json,
``intentd_dev.contract_check``).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from typing import Any

import orjson

from bench.chaos.chains import Chain
from bench.chaos.scenarios import COMPLETING, NATIVE, TERMINAL, Created, Key
from intentd.adapters.postgres import Pool
from intentd.domain.valuation import Owed, Rate, principal_at, revalue, tolerance
from intentd.settings import NATIVE_TOKEN
from intentd_dev.contract_check import ContractViolation, check_event

TERMINAL_STATUSES = ("COMPLETED", "EXPIRED", "REFUNDED", "CANCELLED")
TERMINAL_TYPES = {"intent_completed", "intent_expired", "intent_cancelled"}
ENDING_REFUNDS = {"expired", "failed", "cancelled", "merchant"}


async def unsettled(pool: Pool, sent: set[tuple[str, str]]) -> dict[str, int]:
    """What is still open (empty when settled); ``sent``: (chain name, tx hash) paid."""
    recorded = {
        (r["chain"], r["tx_hash"])
        for r in await pool.fetch("SELECT DISTINCT chain, tx_hash FROM deposits")
    }
    row = await pool.fetchrow(
        f"""SELECT
            (SELECT count(*) FROM intents WHERE status NOT IN {TERMINAL_STATUSES}) AS intents,
            (SELECT count(*) FROM actions WHERE status IN ('ready', 'submitted', 'held'))
                AS actions,
            (SELECT count(*) FROM chain_transactions WHERE status IN ('signed', 'sent', 'mined'))
                AS transactions,
            (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS outbox"""
    )
    assert row is not None
    open_ = {k: int(v) for k, v in dict(row).items() if v}
    if missing := len(sent - recorded):
        open_["deposits"] = missing
    return open_


async def wait_settled(pool: Pool, sent: set[tuple[str, str]], timeout: float) -> dict[str, int]:
    """Wait until nothing is open twice in a row 3 s apart; what is open at the timeout."""
    deadline = time.monotonic() + timeout
    calm = 0
    while time.monotonic() < deadline:
        open_ = await unsettled(pool, sent)
        calm = calm + 1 if not open_ else 0
        if calm >= 2:
            return {}
        await asyncio.sleep(3)
    return await unsettled(pool, sent)


async def token_mismatches(
    chains: dict[str, Chain], before: dict[Key, int], change: Counter[Key]
) -> list[str]:
    found = []
    keys = sorted(change)
    for start in range(0, len(keys), 200):  # balanceOf calls in JSON-RPC batches
        part = keys[start : start + 200]
        for side in ("source", "destination"):
            chain = chains[side]
            mine = [k for k in part if k[0] == side]
            calls = [
                ("eth_call", [{"to": chain.tokens[symbol], "data": balance_of(owner)}, "latest"])
                for _, symbol, owner in mine
            ]
            for key, answer in zip(
                mine, await chain.rpc.batch(calls) if calls else [], strict=True
            ):
                have, want = int(answer, 16), before.get(key, 0) + change[key]
                if have != want:
                    found.append(
                        f"{chain.name} {key[1]} {key[2]}: on chain {have}, expected {want}"
                    )
    return found


async def revalued(pool: Pool, created: list[Created]) -> tuple[list[str], Counter[str]]:
    """The figures of every ETH intent recomputed from the prices the lifecycle recorded
    with each credit (``deposits.valuation``, in the order they were credited: a price
    applied again changes nothing, docs/pricing.md), against those it stored; the
    recomputed ones replace ``total_due`` and ``amount_out`` of each :class:`Created`, so
    the balances are checked against them. A completed intent must also have been covered
    within its slippage (the relayer bore at most ``floor(principal * slippage)``).
    Returns (mismatches, counts: revalued, raised, borne by the relayer, risen)."""
    found: list[str] = []
    counts: Counter[str] = Counter()
    for c in created:
        if c.plan.scenario not in NATIVE:
            continue
        row = await pool.fetchrow(
            "SELECT owed_amount, owed_symbol, slippage, total_due, amount_out, received, status"
            " FROM intents WHERE id = $1",
            c.intent_id,
        )
        assert row is not None
        if row["owed_symbol"] is None:
            found.append(f"intent {c.intent_id} ({c.plan.scenario}): not revalued")
            continue
        owed = Owed(row["owed_amount"], row["owed_symbol"], row["slippage"])
        stored = await pool.fetch(
            "SELECT valuation FROM deposits WHERE intent_id = $1 AND token = $2"
            " AND valuation IS NOT NULL ORDER BY id",
            c.intent_id,
            NATIVE_TOKEN.lower(),
        )
        total, last = c.quoted, None
        for record in stored:
            value = record["valuation"]
            last = Rate.of_json(orjson.loads(value) if isinstance(value, str | bytes) else value)
            total = revalue(
                owed, last, total_due=total, fees=c.fees, decimals_in=18, decimals_out=18
            ).total_due
        out = c.amount_out if last is None else principal_at(owed, last, 18, 18)
        have = (int(row["total_due"]), int(row["amount_out"]))
        if have != (total, out):
            found.append(
                f"intent {c.intent_id} ({c.plan.scenario}): total due and amount out {have},"
                f" recomputed from the prices of its credits {(total, out)}"
            )
        if last is not None:
            counts["revalued"] += 1
            counts["raised"] += total > c.quoted
            counts["risen"] += out < c.amount_out
        if c.plan.scenario in COMPLETING and row["status"] == "COMPLETED":
            bears = out - (total - c.fees)
            counts["borne by the relayer"] += bears > 0
            if bears > tolerance(out, owed.slippage):
                found.append(
                    f"intent {c.intent_id}: the relayer bore {bears} wei, beyond the slippage"
                    f" {owed.slippage} of {out}"
                )
        c.total_due, c.amount_out = total, out
    return found, counts


def balance_of(owner: str) -> str:
    return "0x70a08231" + owner[2:].lower().rjust(64, "0")


async def native_mismatches(
    pool: Pool,
    chains: dict[str, Chain],
    before: dict[tuple[str, str], int],
    paid_in: Counter[Key],
) -> tuple[list[str], dict[str, int], Counter[tuple[str, str]]]:
    """Native balances against intentd's transaction records plus the ETH the payers sent
    to intent addresses (``paid_in``); (mismatches, figures, gross paid to each account
    by intentd's mined native transfers: the amount of the action each carries)."""
    by_name = {c.name: c for c in chains.values()}
    rows = await pool.fetch(
        "SELECT t.chain, t.signer, t.to_address, t.value, t.tx_hash, t.status, t.purpose,"
        " a.token, a.amount, a.kind, a.intent_id"
        " FROM chain_transactions t JOIN actions a ON a.id = t.action_id"
    )
    delta: Counter[tuple[str, str]] = Counter()
    for (side, _, owner), amount in paid_in.items():
        delta[(chains[side].name, owner)] += amount
    gross: Counter[tuple[str, str]] = Counter()
    figures: Counter[str] = Counter()
    found = []
    receipts: dict[str, Any] = {}
    for name, chain in by_name.items():
        hashes = [r["tx_hash"] for r in rows if r["chain"] == name]
        for start in range(0, len(hashes), 200):
            part = hashes[start : start + 200]
            answers = await chain.rpc.batch([("eth_getTransactionReceipt", [h]) for h in part])
            receipts.update(zip(part, answers, strict=True))
    for row in rows:
        receipt = receipts[row["tx_hash"]]
        signer, to = row["signer"].lower(), row["to_address"].lower()
        delta[(row["chain"], signer)] += 0
        if receipt is None:
            figures[f"unmined ({row['status']})"] += 1
            continue
        figures[f"mined ({row['status']})"] += 1
        final = "confirmed" if receipt["status"] == "0x1" else "reverted"
        if row["status"] != final:  # intentd lost track of money that moved
            found.append(
                f"{row['chain']} {row['purpose']} {row['tx_hash']} ({row['kind']} of intent"
                f" {row['intent_id']}): recorded {row['status']}, but mined in block"
                f" {int(receipt['blockNumber'], 16)} with status {receipt['status']}"
            )
        gas = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
        delta[(row["chain"], signer)] -= gas
        if receipt["status"] == "0x1":
            delta[(row["chain"], signer)] -= int(row["value"])
            delta[(row["chain"], to)] += int(row["value"])
            native = row["token"].lower() == NATIVE_TOKEN.lower()
            if row["purpose"] == "transfer" and native:
                gross[(row["chain"], to)] += int(row["amount"])
    for (name, owner), moved in sorted(delta.items()):
        have = await by_name[name].native(owner)
        want = before.get((name, owner), 0) + moved
        if have != want:
            found.append(f"{name} native {owner}: on chain {have}, expected {want}")
    return found, dict(figures), gross


async def native_scenario_mismatches(
    chains: dict[str, Chain],
    balances: Counter[Key],
    expected_gross: Counter[Key],
    gross: Counter[tuple[str, str]],
) -> list[str]:
    """Recipients' ETH to the wei, and the gross paid to each account against the
    scenarios (``scenarios.expected_native``): a prefill or a refund paid twice shows
    even when intentd recorded both transfers."""
    found = []
    for side, _, owner in sorted(balances):
        have = await chains[side].native(owner)
        if have != balances[(side, "ETH", owner)]:
            found.append(
                f"{chains[side].name} ETH {owner}: on chain {have},"
                f" expected {balances[(side, 'ETH', owner)]}"
            )
    for side, _, owner in sorted(expected_gross):
        name = chains[side].name
        want, have = expected_gross[(side, "ETH", owner)], gross[(name, owner)]
        if have != want:
            found.append(f"{name} ETH paid to {owner} by intentd: {have}, expected {want}")
    return found


async def event_mismatches(pool: Pool, created: list[Created]) -> tuple[list[str], int]:
    """(mismatches, under_expiry intents whose payment was refunded as late): an on-time
    payment read after the expiry ran is a late deposit (docs/chaos.md, Findings)."""
    rows = await pool.fetch(
        "SELECT id, intent_id, type, sequence, body FROM intent_events ORDER BY intent_id, sequence"
    )
    events: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        events[row["intent_id"]].append(row)
    found = []
    late = 0
    if len({r["id"] for r in rows}) != len(rows):
        found.append("event ids are not unique")
    for row in rows:
        try:
            check_event(row["body"])
        except ContractViolation as exc:
            found.append(f"intent {row['intent_id']} event {row['sequence']}: {exc}"[:2000])
    for c in created:
        mine = events.get(c.intent_id, [])
        if [e["sequence"] for e in mine] != list(range(1, len(mine) + 1)):
            found.append(f"intent {c.intent_id}: sequences {[e['sequence'] for e in mine]}")
        ending = []
        for event in mine:
            kind = event["type"]
            reason = refund_reason(event["body"]) if kind == "intent_refunded" else None
            if kind in TERMINAL_TYPES or reason in ENDING_REFUNDS:
                ending.append((kind, reason))
        if c.plan.scenario == "under_expiry" and ending == [("intent_expired", None)]:
            late += 1
        allowed = TERMINAL[c.plan.scenario]
        if len(ending) != 1 or ending[0] not in allowed:
            types = [e["type"] for e in mine]
            found.append(
                f"intent {c.intent_id} ({c.plan.scenario}): terminal {ending}, events {types}"
            )
    return found, late


def refund_reason(body: Any) -> str | None:
    import orjson

    data = orjson.loads(body) if isinstance(body, (str, bytes)) else body
    reason: str | None = data.get("data", {}).get("refund", {}).get("reason")
    return reason
