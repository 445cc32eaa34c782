"""One balance rise, two identities: a reconciled deposit identified by its block (rows
recorded before identities by transaction, or a block whose trace did not account for
it) and the same rise identified by the transaction that paid it are never both
credited (``lifecycle.crediting``, on an in-memory unit of work).

After an upgrade, trigger-processing scanning a window again, or a poller publishing a
batch again, finds a rise that was recorded under its block identity under its
transaction identity: crediting both would fund the intent with twice what arrived.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.unit.lifecycle.lifecycle_builders import (
    NOW,
    SOURCE,
    block,
    book,
    intent_row,
    retraction_of,
    tx,
)
from tests.unit.lifecycle.lifecycle_fakes import FakeUnitOfWork

from intentd.chain.evm.balances import UNKNOWN_SENDER, reconciled_tx_hash
from intentd.chain.evm.reconciled_ids import reconciled_by_transaction
from intentd.domain.actions import NATIVE
from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.status import IntentStatus
from intentd.lifecycle.chain_book import BookedChain, BookedToken, ChainBook
from intentd.lifecycle.crediting import credit
from intentd.lifecycle.outcomes import Outcome
from intentd.lifecycle.retractions import retract

TO = intent_row(1).intent_address


def native_book() -> ChainBook:
    usual = book()
    chains = {
        name: BookedChain(
            chain.chain_id,
            chain.relayer,
            chain.fee_account,
            {**chain.tokens, NATIVE: BookedToken(18, 0)},
        )
        for name, chain in usual.chains.items()
    }
    return ChainBook(events_topic=usual.events_topic, chains=chains)


@pytest.fixture
def uow() -> FakeUnitOfWork:
    store = FakeUnitOfWork()
    store.add_intent(replace(intent_row(1, total_due=1_000), token_in=NATIVE, token_out=NATIVE))
    return store


def rise(amount: int, *, by: int | None = None, number: int = 5) -> Deposit:
    """A reconciled deposit to the intent in block ``number``: identified by transaction
    ``tx(by)``, or by its block."""
    block_hash = block(number)
    tx_hash = (
        reconciled_tx_hash(TO, block_hash) if by is None else reconciled_by_transaction(TO, tx(by))
    )
    return Deposit(
        chain=SOURCE, tx_hash=tx_hash, log_index=-1, block_number=number, block_hash=block_hash,
        block_time=NOW, token=NATIVE, from_address=UNKNOWN_SENDER, to_address=TO,
        amount=amount, transfer_index=-1,
    )  # fmt: skip


@pytest.mark.parametrize("block_first", [True, False])
async def test_a_rise_credited_under_one_identity_is_not_credited_under_the_other(
    uow: FakeUnitOfWork, block_first: bool
) -> None:
    by_block, by_transaction = rise(600), rise(600, by=9)
    first, second = (by_block, by_transaction) if block_first else (by_transaction, by_block)

    assert await credit(uow, native_book(), first, now=NOW) is Outcome.CREDITED
    assert await credit(uow, native_book(), second, now=NOW) is Outcome.DUPLICATE

    row = uow.row(1)
    assert (row.received, row.status) == (600, IntentStatus.PENDING)  # not 1,200: FUNDED
    assert [d.deposit.tx_hash for d in uow.state.deposits.values()] == [first.tx_hash]


async def test_two_transactions_paying_in_one_block_are_two_deposits(
    uow: FakeUnitOfWork,
) -> None:
    assert await credit(uow, native_book(), rise(600, by=9), now=NOW) is Outcome.CREDITED
    assert await credit(uow, native_book(), rise(400, by=10), now=NOW) is Outcome.CREDITED
    assert uow.row(1).received == 1_000


async def test_a_retracted_rise_does_not_stand_for_the_other_identity(
    uow: FakeUnitOfWork,
) -> None:
    """The block-identified record was retracted (its block left the chain): what its
    block, canonical again, brings under another identity is credited."""
    legacy = rise(600)
    await credit(uow, native_book(), legacy, now=NOW)
    retraction = retraction_of(legacy)
    assert await retract(uow, native_book(), retraction, now=NOW) is Outcome.RETRACTED
    assert uow.recorded(legacy.key).disposition is Disposition.RETRACTED

    assert await credit(uow, native_book(), rise(600, by=9), now=NOW) is Outcome.CREDITED
    assert uow.row(1).received == 600


async def test_a_rise_of_another_block_is_another_deposit(uow: FakeUnitOfWork) -> None:
    await credit(uow, native_book(), rise(600), now=NOW)
    assert await credit(uow, native_book(), rise(400, by=9, number=6), now=NOW) is (
        Outcome.CREDITED
    )
    assert uow.row(1).received == 1_000
