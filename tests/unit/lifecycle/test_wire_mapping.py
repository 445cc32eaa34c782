"""The wire and the domain: a transfer credited without a message is the deposit its
message would carry; every recorded disposition has its outcome."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from intentd import wire
from intentd.chain.transfers import ChainTransfer
from intentd.domain.action_results import ResultEvent
from intentd.domain.deposits import DepositKey, Disposition, Retraction
from intentd.domain.intent import ActionKind
from intentd.indexer.publishing import deposit_payload, published, retraction_message
from intentd.lifecycle.outcomes import Outcome
from intentd.messages import ActionResultMessage, DepositMessage, decode_chain_message, deposit_id


@given(
    number=st.integers(0, 2**30),
    log_index=st.integers(-1, 2**16),
    transfer_index=st.integers(-1, 2**16),
    amount=st.integers(1, 2**256 - 1),
    hashes=st.lists(st.binary(min_size=32, max_size=32), min_size=2, max_size=2),
    addresses=st.lists(st.binary(min_size=20, max_size=20), min_size=3, max_size=3),
)
def test_a_decoded_transfer_is_the_deposit_of_its_message(
    *, number: int, log_index: int, transfer_index: int, amount: int, hashes: list[bytes],
    addresses: list[bytes],
) -> None:  # fmt: skip
    block_hash, tx_hash = ("0x" + h.hex() for h in hashes)
    token, sender, to = ("0x" + a.hex() for a in addresses)
    found = ChainTransfer(
        number, block_hash, number * 2, tx_hash, 0, log_index, token, sender, to, amount,
        transfer_index,
    )  # fmt: skip
    message = decode_chain_message(deposit_payload("C", 1, found, 0))
    assert isinstance(message, DepositMessage)
    from_message = wire.deposit(message)
    assert wire.found_deposit("C", found) == from_message
    assert from_message.key == DepositKey("C", tx_hash, token, transfer_index)
    assert message.id == deposit_id("C", tx_hash, token, transfer_index)
    assert from_message.block_time == datetime.fromtimestamp(number * 2, UTC)


def test_a_retraction_names_the_block_and_log_it_retracts_and_the_identity() -> None:
    found = ChainTransfer(7, "0x" + "b" * 64, 14, "0x" + "c" * 64, 0, 3, "0x" + "1" * 40,
                          "0x" + "2" * 40, "0x" + "3" * 40, 5, 0)  # fmt: skip
    retraction = wire.retraction(retraction_message("C", published(found)))
    assert retraction == Retraction(
        chain="C", tx_hash=found.tx_hash, log_index=3, block_number=7,
        block_hash=found.block_hash, to_address=found.to_address, token=found.token,
        transfer_index=0,
    )  # fmt: skip


def test_an_action_result_becomes_the_domains() -> None:
    message = ActionResultMessage(
        id="action:4:confirmed", action_id=4, intent_id=2, action_kind="user_refund",
        event="confirmed", chain="C", tx_hash="0x" + "d" * 64, block_number=9, amount_sent=5,
        gas_cost=1,
    )  # fmt: skip
    result = wire.action_result(message)
    assert (result.kind, result.event) == (ActionKind.USER_REFUND, ResultEvent.CONFIRMED)
    assert (result.amount_sent, result.gas_cost, result.block_number) == (5, 1, 9)


def test_every_disposition_a_deposit_is_recorded_with_has_its_outcome() -> None:
    for disposition in Disposition:
        assert Outcome.recorded(disposition).value == disposition.value
