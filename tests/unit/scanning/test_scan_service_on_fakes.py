"""The one scan-and-credit service on the fakes: a range is read and decoded as the
poller decodes it (read again when the answers do not fit), each deposit found is
credited once whatever the repeats, in the chain's batches, and a deposit the lifecycle
refuses goes to the caller (the users: trigger-processing, the rescan, gap recovery and
the trigger verifier, each tested on its own)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.chain.chain_fakes import USDC, FakeChain, Transfer, address
from tests.unit.lifecycle.lifecycle_builders import NOW, SOURCE, intent_row, settings
from tests.unit.lifecycle.lifecycle_chain_fakes import FakeDepositChain
from tests.unit.lifecycle.lifecycle_fakes import FakeStore

from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.ports import RawRange
from intentd.domain.deposits import Deposit
from intentd.lifecycle.chain_book import ChainBook
from intentd.lifecycle.outcomes import Outcome, Unappliable
from intentd.scanning.service import ScanCredits, Swept, scan_blocks
from intentd.settings import ChainConfig, Settings

TO = intent_row(1).intent_address
OTHER = address(99)


def setup(*, batch_size: int = 100) -> tuple[Settings, ChainConfig, FakeStore, FakeChain]:
    """Intent 1 (3,000 USDC due): blocks 1, 3 and 5 pay it 1,000 each, block 2 pays
    another address."""
    base = settings(token=USDC)
    chain = base.chains[SOURCE].model_copy(update={"batch_size": batch_size})
    config = base.model_copy(update={"chains": {**base.chains, SOURCE: chain}})
    store = FakeStore()
    later = datetime.now(UTC) + timedelta(days=1)
    row = replace(intent_row(1, total_due=3_000, expires_at=later), token_in=USDC)
    store.uow.add_intent(replace(row, token_out=USDC))
    fake = FakeChain()
    fake.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=1))
    fake.mine(Transfer(to=OTHER, amount=7, token=USDC, nonce=2))
    fake.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=3))
    fake.mine(count=1)
    fake.mine(Transfer(to=TO, amount=1_000, token=USDC, nonce=5))
    return config, chain, store, fake


async def swept(credits: ScanCredits, chain: ChainConfig, node: FakeDepositChain) -> list[Swept]:
    sweep = credits.sweep(chain, node, BlockRange(1, 5), [TO], now=lambda: NOW)
    return [batch async for batch in sweep]


async def test_a_scan_finds_the_transfers_to_the_watched_addresses_in_chain_order() -> None:
    _, chain, _, fake = setup()
    scanned = await scan_blocks(
        chain, FakeDepositChain(fake, [USDC]), BlockRange(1, 5), WatchedAddresses([TO])
    )
    assert [(t.block_number, t.amount) for t in scanned.transfers] == [
        (1, 1_000), (3, 1_000), (5, 1_000),
    ]  # fmt: skip
    assert [h.number for h in scanned.headers] == [1, 2, 3, 4, 5]
    assert len(scanned.raw.blocks) == 5


class Unproven(FakeDepositChain):
    """A node whose first ``short`` log answers come from another fork (their anchor is
    not the block read: not proven)."""

    def __init__(self, chain: FakeChain, *, short: int) -> None:
        super().__init__(chain, [USDC])
        self.short = short

    async def read_range(self, blocks: BlockRange) -> RawRange:
        raw = await super().read_range(blocks)
        if self.short > 0:
            self.short -= 1
            other = "0x" + "e" * 64
            return RawRange(raw.blocks, [replace(a, anchor_hashes=(other,)) for a in raw.answers])
        return raw


async def test_a_scan_reads_again_when_the_answers_do_not_fit_then_gives_up() -> None:
    _, chain, _, fake = setup()
    node = Unproven(fake, short=2)
    scanned = await scan_blocks(chain, node, BlockRange(1, 5), WatchedAddresses([TO]), attempts=3)
    assert len(scanned.transfers) == 3
    assert len(node.reads) == 3
    with pytest.raises(InconsistentAnswer):  # never "scanned, nothing found"
        await scan_blocks(
            chain, Unproven(fake, short=3), BlockRange(1, 5), WatchedAddresses([TO]), attempts=3
        )
    with pytest.raises(InconsistentAnswer):  # one attempt: the caller retries
        await scan_blocks(chain, Unproven(fake, short=1), BlockRange(1, 5), WatchedAddresses([TO]))


async def test_a_sweep_credits_each_deposit_once_in_the_chains_batches() -> None:
    settings_, chain, store, fake = setup(batch_size=2)
    node = FakeDepositChain(fake, [USDC])
    credits = ScanCredits(settings_, store, watch=True, book=ChainBook.of_settings(settings_))
    first = await swept(credits, chain, node)
    assert [str(batch.blocks) for batch in first] == [
        str(BlockRange(1, 2)), str(BlockRange(3, 4)), str(BlockRange(5, 5)),
    ]  # fmt: skip
    assert [[c.deposit.block_number for c in b.credited] for b in first] == [[1], [3], [5]]
    assert all(c.outcome is Outcome.CREDITED for b in first for c in b.credited)
    assert store.uow.row(1).received == 3_000
    assert len(store.uow.state.watched) == 3  # the trigger verifier watches each
    again = await swept(credits, chain, node)
    assert {c.outcome for b in again for c in b.credited} == {Outcome.DUPLICATE}
    assert store.uow.row(1).received == 3_000


async def test_a_sweep_without_watch_leaves_the_verifier_out() -> None:
    settings_, chain, store, fake = setup()
    await swept(
        ScanCredits(settings_, store, book=ChainBook.of_settings(settings_)),
        chain,
        FakeDepositChain(fake, [USDC]),
    )
    assert store.uow.row(1).received == 3_000
    assert store.uow.state.watched == {}


class Refusing(ScanCredits):
    async def credit_one(self, deposit: Deposit, *, now: datetime) -> Outcome:
        if deposit.block_number == 3:
            raise Unappliable("a re-mined transaction making another transfer")
        return await super().credit_one(deposit, now=now)


async def test_a_refused_deposit_goes_to_the_caller_and_the_sweep_goes_on() -> None:
    settings_, chain, store, fake = setup()
    refused: list[tuple[int, str]] = []

    async def note(deposit: Deposit, exc: Unappliable) -> None:
        refused.append((deposit.block_number, str(exc)))

    node = FakeDepositChain(fake, [USDC])
    sweep = Refusing(settings_, store, book=ChainBook.of_settings(settings_)).sweep(
        chain, node, BlockRange(1, 5), [TO], now=lambda: NOW, refused=note
    )
    [batch] = [b async for b in sweep]
    assert [(c.deposit.block_number, c.outcome) for c in batch.credited] == [
        (1, Outcome.CREDITED), (3, None), (5, Outcome.CREDITED),
    ]  # fmt: skip
    assert refused == [(3, "a re-mined transaction making another transfer")]
    with pytest.raises(Unappliable):  # no one to hand it to: raised
        await swept(
            Refusing(settings_, FakeStore(), book=ChainBook.of_settings(settings_)), chain, node
        )
