"""The poll loop with the balance reconciliation, over in-memory fakes: reconciled
deposits are published with their batch, in chain order; a reorg that mines the paying
transaction again elsewhere keeps the deposit (republished, same id), one that drops
it retracts it."""

from __future__ import annotations

from tests.unit.chain.chain_fakes import ForwardingChain, ForwardingState, Transfer
from tests.unit.indexer.test_poll_loop import TOPIC, W1, W2, Harness

from intentd.chain.evm.balances import Reconciled, reconciled_tx_hash
from intentd.chain.evm.reconciled_ids import reconciled_by_transaction
from intentd.chain.evm.reconciliation import Reconciliation
from intentd.indexer.poller import Poller
from intentd.indexer.watch_refresh import WatchedIntents


class Open:
    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        return [Reconciled(W1, 0, 2_000_000_000)]  # W2 is an ERC-20 intent: not reconciled


def poller(h: Harness, chain: ForwardingChain) -> Poller:
    return Poller(
        h.config, reader=h.reader, store=h.store, publisher=h.publisher,
        watched=WatchedIntents(h.addresses), topic=TOPIC, torn_backoff=0.001,
        reconciliation=Reconciliation("LOOPCHAIN", ForwardingState(chain), Open()),
    )  # fmt: skip


async def test_reconciled_deposits_are_published_with_the_batch_in_chain_order() -> None:
    chain = ForwardingChain()
    h = Harness(chain)
    chain.mine(Transfer(W1, 10))
    call = chain.call(W1, 500, nonce=1)
    chain.forward(W2, 700)  # not a native-coin intent: not reconciled
    chain.forward(W1, 40)  # outside any transaction: identified by its block
    chain.mine(Transfer(W1, 20), Transfer(W2, 30))
    await h.catch_up(poller=poller(h, chain))

    published = [(m["to_address"], m["amount"], m["tx_hash"]) for m in h.published()]
    assert published == [
        (W1, 10, Transfer(W1, 10).tx_hash),
        (W1, 500, reconciled_by_transaction(W1, call.tx_hash)),
        (W1, 40, reconciled_tx_hash(W1, chain.blocks[4]["hash"])),
        (W1, 20, Transfer(W1, 20).tx_hash),
        (W2, 30, Transfer(W2, 30).tx_hash),
    ]


async def test_a_reorg_that_mines_the_paying_call_elsewhere_keeps_the_deposit() -> None:
    """Block 3 pays W1 500 through a contract; a reorg from block 2 mines the same
    call in block 4: the deposit is republished with the same id, never retracted (a
    retraction would hold the intent's actions, and the payment would come back as a
    new, late deposit)."""
    chain = ForwardingChain()
    h = Harness(chain, confirmations=1)
    chain.mine(count=2)
    call = chain.call(W1, 500, nonce=1)
    chain.mine(count=2)
    await h.catch_up(poller=poller(h, chain))
    [deposit] = h.published()

    chain.fork(keep=2)
    chain.mine()
    chain.mine(call)  # the same transaction, one block later on the new branch
    chain.mine(count=2)
    await h.catch_up(poller=poller(h, chain))

    first, again = h.published()
    assert again["kind"] == "deposit"  # no retraction
    assert (again["id"], again["amount"]) == (deposit["id"], 500)
    assert (first["block_number"], again["block_number"]) == (3, 4)
    assert again["block_hash"] == chain.blocks[4]["hash"]


async def test_a_reorg_retracts_a_reconciled_deposit_its_new_branch_lacks() -> None:
    chain = ForwardingChain()
    h = Harness(chain, confirmations=1)
    chain.mine(count=2)
    chain.call(W1, 500, nonce=1)
    chain.mine(count=2)
    await h.catch_up(poller=poller(h, chain))
    [deposit] = h.published()

    chain.fork(keep=2)
    chain.mine(count=4)
    chain.call(W1, 300, nonce=2)  # another payment
    await h.catch_up(poller=poller(h, chain))

    kinds = [(m["kind"], m["id"], m["amount"] if m["kind"] == "deposit" else None)
             for m in h.published()]  # fmt: skip
    retraction, replacement = kinds[1:]
    assert retraction == ("retraction", deposit["id"], None)
    assert replacement[0] == "deposit" and replacement[2] == 300
    assert replacement[1] != deposit["id"]
