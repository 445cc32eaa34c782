"""A payment of an intent priced in USD, credited after the price moved
(``lifecycle.crediting.credit`` with a rate source, ``lifecycle.awaiting``), on fakes.

The intent: 30 USD paid in ETH, created at 3,000 USD (0.01 ETH, plus 0.0001 ETH of
application fee), 1 % slippage. ETH's price when the payment is credited decides.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from tests.unit.lifecycle.lifecycle_builders import (
    DESTINATION,
    EXPIRES,
    FEE_ACCOUNT,
    NOW,
    RELAYER,
    SOURCE,
    TOPIC,
    deposit,
    intent_row,
    result,
    retraction_of,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork
from tests.unit.lifecycle.lifecycle_repository_fakes import FakeOutbox

from intentd.contract.record import IntentRow, render_record
from intentd.domain.action_results import ResultEvent
from intentd.domain.deposits import Disposition
from intentd.domain.intent import ActionKind, RefundReason
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.domain.valuation import PriceUsed, Rate
from intentd.lifecycle.awaiting import value_awaiting
from intentd.lifecycle.chain_book import BookedChain, BookedToken, ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.handlers import apply_action_result, expire
from intentd.lifecycle.outcomes import Outcome
from intentd.settings import NATIVE_TOKEN

ETH = NATIVE_TOKEN.lower()
WEI = 10**18
PRINCIPAL, FEES = WEI // 100, WEI // 10_000  # 0.01 ETH, 0.0001 ETH
TOTAL = PRINCIPAL + FEES


def book() -> ChainBook:
    tokens = {ETH: BookedToken(18, 0)}
    return ChainBook(
        events_topic=TOPIC,
        chains={
            SOURCE: BookedChain(1, RELAYER, FEE_ACCOUNT, tokens),
            DESTINATION: BookedChain(2, RELAYER, FEE_ACCOUNT, tokens),
        },
    )


def eth_intent(intent_id: int = 1, *, slippage: str = "0.01") -> IntentRow:
    """30 USD in ETH at 3,000 USD."""
    return replace(
        intent_row(intent_id, total_due=TOTAL, fees=0),
        token_in=ETH, token_out=ETH, asset_token_symbol="ETH", asset_token_decimals=18,
        token_out_decimals=18, fees_in_asset=0, app_fee_in_asset=FEES, amount_out=PRINCIPAL,
        amount_symbol="USD", initial_amount="0.01", slippage=Decimal(slippage),
        owed_amount=Decimal(30), owed_symbol="USD",
        prices=[PriceUsed("ETH", Decimal(3000), "chainlink", "SRC:0xfeed", 7).as_json()],
    )  # fmt: skip


class Prices:
    """A rate source whose ETH price the test moves (None: no trusted price)."""

    def __init__(self, usd: str | None) -> None:
        self.usd = usd
        self.round_id = 8

    def rate(self, row: IntentRow) -> Rate | None:
        if row.owed is None or self.usd is None:
            return None
        price = PriceUsed("ETH", Decimal(self.usd), "chainlink", "SRC:0xfeed", self.round_id)
        return Rate(Decimal(self.usd), Decimal(1), (price,))


def pay(amount: int, n: int = 1) -> object:
    return deposit(eth_intent().intent_address, amount, n=n, token=ETH)


@pytest.fixture
def uow() -> FakeUnitOfWork:
    store = FakeUnitOfWork()
    store.add_intent(eth_intent())
    return store


async def test_an_eth_deposit_after_a_ten_percent_drop_with_one_percent_slippage_is_underfunded(
    uow: FakeUnitOfWork,
) -> None:
    """The money rule of issue 20: paid the quoted 0.0101 ETH after ETH fell to 2,700, the
    30 USD owed are 0.011111… ETH now; the payer owes the difference, no prefill yet."""
    outcome = await credit(uow, book(), pay(TOTAL), now=NOW, valuer=Prices("2700"))
    assert outcome is Outcome.CREDITED
    row = uow.row(1)
    assert (row.status, row.funding_status) == (IntentStatus.PENDING, FundingStatus.UNDERFUNDED)
    principal = 11_111_111_111_111_112  # 30 / 2700 ETH, rounded up to the wei
    assert row.total_due == principal + FEES and row.amount_out == principal
    assert uow.actions_of(1) == []  # no prefill the relayer would pay for
    [event] = uow.published()
    assert event["data"]["funding"]["shortfall"] == "0.001111111111111112"
    valuation = event["data"]["valuation"]
    assert valuation["status"] == "valued" and valuation["raised"] is True
    assert valuation["token_in_usd"] == "2700"
    assert valuation["prices"][0] | {} == {
        "symbol": "ETH", "usd": "2700", "source": "chainlink", "feed": "SRC:0xfeed",
        "round_id": "8", "updated_at": None, "feed_usd": None,
    }  # fmt: skip
    assert valuation["total_due"] == "0.011211111111111112"
    record = event["intent"]
    assert record["total_amount_in_asset_token"] == "0.011211111111111112"
    assert record["initialAmount"] == "0.011111111111111112"
    assert record["valuation"]["raised"] is True
    [recorded] = uow.state.deposits.values()
    assert recorded.rate is not None and recorded.rate.token_in == Decimal(2700)


async def test_a_top_up_of_the_shortfall_completes_it(uow: FakeUnitOfWork) -> None:
    prices = Prices("2700")
    await credit(uow, book(), pay(TOTAL, 1), now=NOW, valuer=prices)
    shortfall = uow.row(1).total_due - TOTAL
    await credit(uow, book(), pay(shortfall, 2), now=NOW, valuer=prices)
    row = uow.row(1)
    assert (row.status, row.funding_status) == (IntentStatus.FUNDED, FundingStatus.EXACT)
    [prefill] = uow.actions_of(1)
    assert prefill.action.kind is ActionKind.PREFILL
    assert prefill.action.amount == 11_111_111_111_111_112  # the 30 USD at 2,700
    assert uow.published()[-1]["data"]["valuation"]["relayer_bears"] == "0"
    sent = result(prefill.id, 1, ActionKind.PREFILL, ResultEvent.CONFIRMED, block_number=9)
    await apply_action_result(uow, book(), sent, now=NOW)
    repay = [a.action for a in uow.actions_of(1) if a.action.kind is ActionKind.RELAYER_REFUND]
    assert [a.amount for a in repay] == [row.total_due - FEES]  # all the relayer paid out


async def test_without_a_top_up_it_is_refunded_at_expiry(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(), pay(TOTAL), now=NOW, valuer=Prices("2700"))
    assert await expire(uow, book(), 1, now=EXPIRES + timedelta(seconds=1)) is Outcome.EXPIRED
    assert uow.row(1).status is IntentStatus.REFUNDING
    [refund] = uow.actions_of(1)
    assert (refund.action.kind, refund.action.reason, refund.action.amount) == (
        ActionKind.USER_REFUND,
        RefundReason.EXPIRED,
        TOTAL,
    )


async def test_a_drop_within_the_slippage_is_borne_by_the_relayer(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(), pay(TOTAL), now=NOW, valuer=Prices("2985"))
    row = uow.row(1)
    assert (row.status, row.total_due) == (IntentStatus.FUNDED, TOTAL)
    [prefill] = uow.actions_of(1)
    assert prefill.action.amount == 10_050_251_256_281_408  # 30 USD at 2,985
    valuation = uow.published()[0]["data"]["valuation"]
    assert valuation["raised"] is False
    assert valuation["relayer_bears"] == "0.000050251256281408"  # within 1 % of 0.01005…


async def test_a_rise_keeps_the_quoted_total_and_pays_the_recipient_the_amount_owed(
    uow: FakeUnitOfWork,
) -> None:
    await credit(uow, book(), pay(TOTAL), now=NOW, valuer=Prices("3300"))
    row = uow.row(1)
    assert (row.status, row.total_due, row.funding_status) == (
        IntentStatus.FUNDED,
        TOTAL,
        FundingStatus.EXACT,
    )
    [prefill] = uow.actions_of(1)
    assert prefill.action.amount == 9_090_909_090_909_091  # 30 USD at 3,300


async def test_an_intent_priced_in_its_own_token_is_not_revalued(uow: FakeUnitOfWork) -> None:
    plain = replace(eth_intent(2), owed_amount=None, owed_symbol=None, slippage=Decimal(0))
    uow.add_intent(plain)
    to = plain.intent_address
    await credit(uow, book(), deposit(to, TOTAL, n=5, token=ETH), now=NOW, valuer=Prices(None))
    row = uow.row(2)
    assert (row.status, row.total_due, row.amount_out) == (IntentStatus.FUNDED, TOTAL, PRINCIPAL)
    assert "valuation" not in uow.published()[0]["data"]


async def test_no_trusted_price_credits_the_payment_and_the_intent_awaits_one(
    uow: FakeUnitOfWork,
) -> None:
    prices = Prices(None)
    await credit(uow, book(), pay(TOTAL), now=NOW, valuer=prices)
    row = uow.row(1)
    assert (row.status, row.received, row.awaiting_price) == (IntentStatus.PENDING, TOTAL, True)
    assert uow.actions_of(1) == []  # no money decided on a missing price
    assert uow.published()[0]["data"]["valuation"] == {"status": "awaiting_price"}
    assert render_record(row)["valuation"] == {"status": "awaiting_price"}
    assert await value_awaiting(uow, book(), prices, now=NOW) == 0  # still none
    prices.usd = "2990"
    assert await value_awaiting(uow, book(), prices, now=NOW) == 1
    row = uow.row(1)
    assert (row.status, row.awaiting_price) == (IntentStatus.FUNDED, False)
    [prefill] = uow.actions_of(1)
    assert prefill.action.amount == 10_033_444_816_053_512  # 30 USD at 2,990
    event = uow.published()[-1]
    assert event["type"] == "intent_funded" and "deposit" not in event["data"]
    assert event["data"]["valuation"]["token_in_usd"] == "2990"
    [recorded] = uow.state.deposits.values()  # the prices its credit was decided at
    assert recorded.rate is not None and recorded.rate.token_in == Decimal(2990)
    assert await value_awaiting(uow, book(), prices, now=NOW) == 0


async def test_a_payment_awaiting_a_price_is_valued_by_the_next_credit_that_has_one(
    uow: FakeUnitOfWork,
) -> None:
    prices = Prices(None)
    await credit(uow, book(), pay(TOTAL // 2, 1), now=NOW, valuer=prices)
    prices.usd = "3000"
    await credit(uow, book(), pay(TOTAL - TOTAL // 2, 2), now=NOW, valuer=prices)
    row = uow.row(1)
    assert (row.status, row.awaiting_price) == (IntentStatus.FUNDED, False)
    rates = [d.rate.token_in if d.rate else None for d in uow.state.deposits.values()]
    assert rates == [Decimal(3000), Decimal(3000)]


async def test_an_intent_awaiting_a_price_is_refunded_at_expiry(uow: FakeUnitOfWork) -> None:
    await credit(uow, book(), pay(TOTAL), now=NOW, valuer=Prices(None))
    await expire(uow, book(), 1, now=EXPIRES + timedelta(seconds=1))
    [refund] = uow.actions_of(1)
    assert (refund.action.reason, refund.action.amount) == (RefundReason.EXPIRED, TOTAL)
    assert await value_awaiting(uow, book(), Prices("3000"), now=NOW) == 0


class FailingOnce(FakeOutbox):
    """An outbox whose first write fails: a crash after the revaluation, before the
    commit (the transaction rolls back)."""

    failed = False

    async def add(self, *, topic: str, key: str, payload: bytes) -> None:
        if not self.failed:
            self.failed = True
            raise ConnectionError("killed between the revaluation and the commit")
        await super().add(topic=topic, key=key, payload=payload)


async def test_a_crash_before_the_commit_loses_nothing_and_doubles_nothing() -> None:
    uow = FakeUnitOfWork()
    uow.outbox = FailingOnce(uow)
    uow.add_intent(eth_intent())
    prices = Prices("2700")
    with pytest.raises(ConnectionError):
        await credit(uow, book(), pay(TOTAL), now=NOW, valuer=prices)
    assert uow.row(1) == eth_intent() and uow.state.deposits == {} and uow.published() == []
    prices.usd, prices.round_id = "2985", 9  # the replay finds another price: it decides once
    await credit(uow, book(), pay(TOTAL), now=NOW, valuer=prices)
    assert await credit(uow, book(), pay(TOTAL), now=NOW, valuer=prices) is Outcome.DUPLICATE
    row = uow.row(1)
    assert (row.status, row.received, row.event_sequence) == (IntentStatus.FUNDED, TOTAL, 1)
    [prefill] = uow.actions_of(1)
    assert prefill.action.amount == 10_050_251_256_281_408
    [recorded] = uow.state.deposits.values()
    assert recorded.rate is not None and recorded.rate.token_in == Decimal("2985")


async def test_a_deposit_a_reorg_brings_back_is_valued_at_its_first_prices(
    uow: FakeUnitOfWork,
) -> None:
    prices = Prices("2700")
    first = pay(TOTAL)
    await credit(uow, book(), first, now=NOW, valuer=prices)
    raised = uow.row(1).total_due
    from intentd.lifecycle.retractions import retract

    await retract(uow, book(), retraction_of(first), now=NOW)
    assert uow.row(1).received == 0
    prices.usd = "3300"  # it would fund at this price
    moved = replace(first, block_number=50, block_hash="0x" + "e" * 64)
    assert await credit(uow, book(), moved, now=NOW, valuer=prices) is Outcome.CREDITED
    row = uow.row(1)
    assert (row.status, row.total_due) == (IntentStatus.PENDING, raised)
    [recorded] = uow.state.deposits.values()
    assert recorded.disposition is Disposition.CREDITED
    assert recorded.rate is not None and recorded.rate.token_in == Decimal(2700)
