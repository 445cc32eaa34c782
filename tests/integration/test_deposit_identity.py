"""A deposit is the same deposit on every fork (real PostgreSQL, the lifecycle's handlers).

A transfer re-mined at another height and position keeps its identity ``(chain, tx,
token, transfer_index)``: it is relocated, never credited or refunded a second time.
A retraction that cannot be undone holds the intent's spending actions until the
transfer is back (or alerts after a bound).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.lifecycle_calls import (
    Outcome,
    Unappliable,
    apply_action_result,
    apply_deposit,
    apply_retraction,
)
from tests.support import new_intent

from intentd.adapters.postgres import Pool, intent_store
from intentd.adapters.postgres.lifecycle_uow import PostgresStore
from intentd.contract.record import IntentRow
from intentd.domain.status import IntentStatus
from intentd.lifecycle.holds import HoldWatch
from intentd.messages import (
    ActionResultMessage,
    DepositMessage,
    RetractionMessage,
    action_result_id,
    deposit_id,
)
from intentd.settings import Settings

pytestmark = pytest.mark.integration
CHAIN = "BASE_TESTNET"


def transfer(
    settings: Settings,
    to: str,
    amount: int,
    *,
    block: int = 100,
    log_index: int = 0,
    transfer_index: int | None = 0,
    tx_hash: str | None = None,
) -> DepositMessage:
    usdc = next(t.address for t in settings.chains[CHAIN].tokens if t.symbol == "USDC").lower()
    tx = tx_hash or "0x" + secrets.token_hex(32)
    ident = (
        f"{CHAIN}:{tx}:{log_index}"
        if transfer_index is None
        else deposit_id(CHAIN, tx, usdc, transfer_index)
    )
    return DepositMessage(
        id=ident,
        chain=CHAIN,
        chain_id=settings.chains[CHAIN].chain_id,
        tx_hash=tx,
        log_index=log_index,
        transfer_index=transfer_index,
        block_number=block,
        block_hash="0x" + secrets.token_hex(32),
        block_time=int(datetime.now(UTC).timestamp()),
        token=usdc,
        from_address="0x" + "2" * 40,
        to_address=to.lower(),
        amount=amount,
    )


def moved(message: DepositMessage, *, block: int, log_index: int) -> DepositMessage:
    """The same transfer mined again at another height and position of its block."""
    return message.model_copy(
        update={
            "block_number": block,
            "block_hash": "0x" + secrets.token_hex(32),
            "log_index": log_index,
        }
    )


def retraction(message: DepositMessage) -> RetractionMessage:
    return RetractionMessage(
        id=message.id,
        chain=message.chain,
        tx_hash=message.tx_hash,
        log_index=message.log_index,
        block_number=message.block_number,
        block_hash=message.block_hash,
        to_address=message.to_address,
        token=message.token,
        transfer_index=message.transfer_index,
    )


async def deposit(pool: Pool, settings: Settings, message: DepositMessage) -> Outcome:
    async with pool.acquire() as conn:
        return await apply_deposit(conn, settings, message, now=datetime.now(UTC))


async def retract(pool: Pool, settings: Settings, message: DepositMessage) -> Outcome:
    async with pool.acquire() as conn:
        return await apply_retraction(conn, settings, retraction(message), now=datetime.now(UTC))


async def actions(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT id, kind, chain, amount, reason, status FROM actions"
        " WHERE intent_id = $1 ORDER BY id",
        intent_id,
    )
    return [dict(r) for r in rows]


async def result(
    pool: Pool, settings: Settings, row: IntentRow, action: dict[str, Any], event: str
) -> None:
    message = ActionResultMessage(
        id=action_result_id(action["id"], event),
        action_id=action["id"],
        intent_id=row.id,
        action_kind=action["kind"],
        event=event,
        chain=action["chain"],
        tx_hash="0x" + secrets.token_hex(32),
        block_number=200 if event == "confirmed" else None,
    )
    async with pool.acquire() as conn:
        await apply_action_result(conn, settings, message, now=datetime.now(UTC))


async def deposit_rows(pool: Pool, intent_id: int) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT block_number, log_index, transfer_index, disposition,"
        " orphaned_at IS NOT NULL AS orphaned FROM deposits WHERE intent_id = $1 ORDER BY id",
        intent_id,
    )
    return [dict(r) for r in rows]


async def completed_with_top_up(pool: Pool, settings: Settings) -> tuple[IntentRow, DepositMessage]:
    row = await new_intent(pool, settings, amount="10")
    assert await deposit(pool, settings, transfer(settings, row.intent_address, 6_000_000)) is (
        Outcome.CREDITED
    )
    top_up = transfer(settings, row.intent_address, 4_000_000, block=101, log_index=3)
    assert await deposit(pool, settings, top_up) is Outcome.CREDITED
    [prefill] = await actions(pool, row.id)
    await result(pool, settings, row, prefill, "sent")
    await result(pool, settings, row, prefill, "confirmed")
    return row, top_up


async def test_a_top_up_moved_by_a_reorg_after_the_prefill_is_not_a_late_deposit(
    pool: Pool, settings: Settings
) -> None:
    row, top_up = await completed_with_top_up(pool, settings)
    [relayer_refund] = [a for a in await actions(pool, row.id) if a["kind"] == "relayer_refund"]
    assert relayer_refund["status"] == "ready"

    # the reorg removes the top-up's block; the intent cannot be un-credited any more
    assert await retract(pool, settings, top_up) is Outcome.RETRACTION_ALERT
    statuses = {a["kind"]: a["status"] for a in await actions(pool, row.id)}
    assert statuses["relayer_refund"] == "held"  # not spent while the top-up is off chain

    # the same transfer, mined again at another height and position
    again = moved(top_up, block=104, log_index=17)
    assert await deposit(pool, settings, again) is Outcome.RELOCATED
    assert await deposit(pool, settings, again) is Outcome.DUPLICATE
    after = await actions(pool, row.id)
    assert [a["kind"] for a in after if a["kind"] == "user_refund"] == []  # nothing refunded
    assert {a["kind"]: a["status"] for a in after}["relayer_refund"] == "ready"
    stored = await deposit_rows(pool, row.id)
    assert [(d["block_number"], d["log_index"], d["orphaned"]) for d in stored] == [
        (100, 0, False),
        (104, 17, False),
    ]
    assert {d["disposition"] for d in stored} == {"credited"}
    intent = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert intent is not None
    assert (intent.status, intent.received) == (IntentStatus.COMPLETED, 10_000_000)


async def test_a_transfer_republished_from_its_new_block_is_relocated_without_a_retraction(
    pool: Pool, settings: Settings
) -> None:
    row, top_up = await completed_with_top_up(pool, settings)
    assert await deposit(pool, settings, moved(top_up, block=103, log_index=0)) is (
        Outcome.RELOCATED
    )
    # the retraction of the orphaned block, if it still comes, names a record that moved
    assert await retract(pool, settings, top_up) is Outcome.RETRACTION_NOOP
    assert [d["block_number"] for d in await deposit_rows(pool, row.id)] == [100, 103]
    assert {a["status"] for a in await actions(pool, row.id) if a["kind"] != "prefill"} == {"ready"}


async def test_a_funded_intent_reorged_before_its_prefill_is_funded_once_again(
    pool: Pool, settings: Settings
) -> None:
    row = await new_intent(pool, settings, amount="10")
    paid = transfer(settings, row.intent_address, 10_000_000)
    assert await deposit(pool, settings, paid) is Outcome.CREDITED
    assert await retract(pool, settings, paid) is Outcome.RETRACTED  # prefill cancelled
    assert await deposit(pool, settings, moved(paid, block=102, log_index=5)) is (Outcome.CREDITED)
    kinds = [(a["kind"], a["status"]) for a in await actions(pool, row.id)]
    assert kinds == [("prefill", "cancelled"), ("prefill", "ready")]
    stored = await deposit_rows(pool, row.id)
    assert [(d["block_number"], d["disposition"]) for d in stored] == [(102, "credited")]


async def test_a_late_deposit_whose_refund_was_signed_is_refunded_once_across_a_reorg(
    pool: Pool, settings: Settings
) -> None:
    row, _ = await completed_with_top_up(pool, settings)
    late = transfer(settings, row.intent_address, 1_000_000, block=150, log_index=2)
    assert await deposit(pool, settings, late) is Outcome.REFUND_OWED
    [refund] = [a for a in await actions(pool, row.id) if a["kind"] == "user_refund"]
    await pool.execute("UPDATE actions SET status = 'submitted' WHERE id = $1", refund["id"])
    assert await retract(pool, settings, late) is Outcome.RETRACTION_ALERT
    held = {a["kind"]: a["status"] for a in await actions(pool, row.id)}
    assert held["relayer_refund"] == "held"  # may not spend what the late refund needs
    assert await deposit(pool, settings, moved(late, block=152, log_index=0)) is (Outcome.RELOCATED)
    after = await actions(pool, row.id)
    assert len([a for a in after if a["kind"] == "user_refund"]) == 1
    assert {a["kind"]: a["status"] for a in after}["relayer_refund"] == "ready"


async def test_a_deposit_recorded_before_identities_is_adopted_not_credited_twice(
    pool: Pool, settings: Settings
) -> None:
    row = await new_intent(pool, settings, amount="10")
    old = transfer(settings, row.intent_address, 3_000_000, log_index=9, transfer_index=None)
    assert await deposit(pool, settings, old) is Outcome.CREDITED  # an older poller's message
    new = transfer(
        settings, row.intent_address, 3_000_000, log_index=4, transfer_index=0, tx_hash=old.tx_hash
    )
    new = new.model_copy(update={"block_number": 101})
    assert await deposit(pool, settings, new) is Outcome.RELOCATED
    stored = await deposit_rows(pool, row.id)
    assert [(d["block_number"], d["transfer_index"]) for d in stored] == [(101, 0)]
    intent = await intent_store.get_by_id(pool, row.id)  # type: ignore[arg-type]
    assert intent is not None and intent.received == 3_000_000


async def test_a_hold_that_outlasts_its_bound_alerts_once(pool: Pool, settings: Settings) -> None:
    row, top_up = await completed_with_top_up(pool, settings)
    assert await retract(pool, settings, top_up) is Outcome.RETRACTION_ALERT
    watch = HoldWatch(PostgresStore(pool), alert_after=0)
    await watch.check()
    alerted = await pool.fetchval(
        "SELECT count(*) FROM deposits WHERE intent_id = $1 AND hold_alerted_at IS NOT NULL",
        row.id,
    )
    assert alerted == 1
    await watch.check()  # once per hold
    assert {a["kind"]: a["status"] for a in await actions(pool, row.id)}["relayer_refund"] == (
        "held"
    )


async def test_an_orphaned_deposit_whose_block_comes_back_releases_its_hold(
    pool: Pool, settings: Settings
) -> None:
    row, top_up = await completed_with_top_up(pool, settings)
    assert await retract(pool, settings, top_up) is Outcome.RETRACTION_ALERT
    # a flip-flop: the orphaned block is canonical again, the same transfer published again
    await deposit(pool, settings, top_up)
    statuses = {a["kind"]: a["status"] for a in await actions(pool, row.id)}
    assert statuses["relayer_refund"] == "ready"
    assert [d["orphaned"] for d in await deposit_rows(pool, row.id)] == [False, False]


async def test_a_transaction_re_mined_with_another_transfer_does_not_release_the_hold(
    pool: Pool, settings: Settings
) -> None:
    row, top_up = await completed_with_top_up(pool, settings)
    assert await retract(pool, settings, top_up) is Outcome.RETRACTION_ALERT
    # the same transaction, re-mined, now moves 1 unit at that position: not the top-up
    smaller = moved(top_up, block=104, log_index=17).model_copy(update={"amount": 1})
    with pytest.raises(Unappliable, match="another transfer"):
        await deposit(pool, settings, smaller)
    statuses = {a["kind"]: a["status"] for a in await actions(pool, row.id)}
    assert statuses["relayer_refund"] == "held"  # still nothing spent against the missing 4
    assert [d["orphaned"] for d in await deposit_rows(pool, row.id)] == [False, True]
