"""The poll loop with the balance reconciliation, over in-memory fakes: reconciled
deposits are published with their batch, in chain order; a reorg that mines the paying
transaction again elsewhere keeps the deposit (republished, same id), one that drops
it retracts it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.unit.indexer.indexer_fakes import FakeChain, Transfer
from tests.unit.indexer.test_poll_loop import TOPIC, W1, W2, Harness

from intentd.indexer.balances import Reconciled, reconciled_tx_hash
from intentd.indexer.poller import Poller
from intentd.indexer.reconciled_ids import reconciled_by_transaction
from intentd.indexer.reconciliation import Reconciliation
from intentd.indexer.watch_refresh import WatchedIntents

ROUTER = "0x" + "d" * 40


class ForwardingChain(FakeChain):
    """A fake chain in which contracts also credit addresses (no transaction to them):
    a contract call (a transaction to :data:`ROUTER`) that pays an address, or a credit
    outside any transaction (a chain's system credit: no trace shows it)."""

    def __init__(self) -> None:
        self.credits: dict[str, dict[str, int]] = {}  # block hash -> address -> amount
        self.calls: dict[str, tuple[str, int]] = {}  # tx hash -> (address, amount)
        super().__init__()

    def forward(self, to: str, amount: int) -> None:
        """Mine a block in which ``amount`` arrives at ``to`` outside any transaction."""
        self.mine()
        self.credits[self.blocks[-1]["hash"]] = {to: amount}

    def call(self, to: str, amount: int, nonce: int) -> Transfer:
        """Mine a block with a contract call that sends ``amount`` to ``to``; the call."""
        call = Transfer(ROUTER, amount, nonce=nonce)
        self.calls[call.tx_hash] = (to, amount)
        self.mine(call)
        return call

    def _changes(self, block: dict[str, Any], address: str) -> list[int]:
        changes = []
        for tx in block["transactions"]:
            paid = int(tx["value"], 16) if tx["to"] == address else 0
            to, amount = self.calls.get(tx["hash"], ("", 0))
            changes.append(paid + (amount if to == address else 0))
        return changes

    def balance(self, address: str, block_hash: str) -> int:
        [number] = [n for n, b in enumerate(self.blocks) if b["hash"] == block_hash]
        total = 0
        for block in self.blocks[: number + 1]:
            total += sum(self._changes(block, address))
            total += self.credits.get(block["hash"], {}).get(address, 0)
        return total

    def trace(self, block_hash: str) -> list[dict[str, Any]]:
        """The prestate-diff trace of the block (balances before and after each tx)."""
        [block] = [b for b in self.blocks if b["hash"] == block_hash]
        start = {a: self.balance(a, block["parentHash"]) for a in (W1, W2)}
        entries = []
        for i, tx in enumerate(block["transactions"]):
            pre, post = {}, {}
            for address in (W1, W2):
                change = self._changes(block, address)[i]
                if change:
                    pre[address] = {"balance": hex(start[address])}
                    start[address] += change
                    post[address] = {"balance": hex(start[address])}
            entries.append({"txHash": tx["hash"], "result": {"pre": pre, "post": post}})
        return entries


class FakeState:
    def __init__(self, chain: ForwardingChain) -> None:
        self.chain = chain

    async def balances(self, queries: Sequence[tuple[str, str]]) -> list[int]:
        return [self.chain.balance(address, block_hash) for address, block_hash in queries]

    async def receipts(self, tx_hashes: Sequence[str]) -> list[Mapping[str, Any]]:
        found = []
        for tx_hash in tx_hashes:
            [block] = [
                b for b in self.chain.blocks if any(t["hash"] == tx_hash for t in b["transactions"])
            ]
            found.append(
                {"status": "0x1", "gasUsed": "0x0", "effectiveGasPrice": "0x0",
                 "blockHash": block["hash"]}
            )  # fmt: skip
        return found

    async def traces(self, block_hashes: Sequence[str]) -> list[Sequence[Any]]:
        return [self.chain.trace(h) for h in block_hashes]


class Open:
    async def reconciled(self, first_time: int, last_time: int) -> list[Reconciled]:
        return [Reconciled(W1, 0, 2_000_000_000)]  # W2 is an ERC-20 intent: not reconciled


def poller(h: Harness, chain: ForwardingChain) -> Poller:
    return Poller(
        h.config, reader=h.reader, store=h.store, publisher=h.publisher,
        watched=WatchedIntents(h.addresses), topic=TOPIC, torn_backoff=0.001,
        reconciliation=Reconciliation("LOOPCHAIN", FakeState(chain), Open()),
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
