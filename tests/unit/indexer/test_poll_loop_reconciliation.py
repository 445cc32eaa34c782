"""The poll loop with the balance reconciliation, over in-memory fakes: reconciled
deposits are published with their batch, in chain order, and retracted by a reorg."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.unit.indexer.indexer_fakes import FakeChain, Transfer
from tests.unit.indexer.test_poll_loop import TOPIC, W1, W2, Harness

from intentd.indexer.balances import Reconciled, reconciled_tx_hash
from intentd.indexer.poller import Poller
from intentd.indexer.reconciliation import Reconciliation
from intentd.indexer.watch_refresh import WatchedIntents


class ForwardingChain(FakeChain):
    """A fake chain in which contracts also credit addresses (no transaction to them)."""

    def __init__(self) -> None:
        self.credits: dict[str, dict[str, int]] = {}  # block hash -> address -> amount
        super().__init__()

    def forward(self, to: str, amount: int) -> None:
        """Mine a block in which a contract sends ``amount`` to ``to``."""
        self.mine()
        self.credits[self.blocks[-1]["hash"]] = {to: amount}

    def balance(self, address: str, block_hash: str) -> int:
        [number] = [n for n, b in enumerate(self.blocks) if b["hash"] == block_hash]
        total = 0
        for block in self.blocks[: number + 1]:
            total += sum(int(t["value"], 16) for t in block["transactions"] if t["to"] == address)
            total += self.credits.get(block["hash"], {}).get(address, 0)
        return total


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
    chain.forward(W1, 500)
    chain.forward(W2, 700)  # not a native-coin intent: not reconciled
    chain.mine(Transfer(W1, 20), Transfer(W2, 30))
    await h.catch_up(poller=poller(h, chain))

    published = [(m["to_address"], m["amount"], m["tx_hash"]) for m in h.published()]
    assert published == [
        (W1, 10, Transfer(W1, 10).tx_hash),
        (W1, 500, reconciled_tx_hash(W1, chain.blocks[2]["hash"])),
        (W1, 20, Transfer(W1, 20).tx_hash),
        (W2, 30, Transfer(W2, 30).tx_hash),
    ]


async def test_a_reorg_retracts_a_reconciled_deposit_its_new_branch_lacks() -> None:
    chain = ForwardingChain()
    h = Harness(chain, confirmations=1)
    chain.mine(count=2)
    chain.forward(W1, 500)
    chain.mine(count=2)
    await h.catch_up(poller=poller(h, chain))
    [deposit] = h.published()

    chain.fork(keep=2)
    chain.mine(count=4)
    chain.forward(W1, 300)
    await h.catch_up(poller=poller(h, chain))

    kinds = [(m["kind"], m["id"], m["amount"] if m["kind"] == "deposit" else None)
             for m in h.published()]  # fmt: skip
    retraction, replacement = kinds[1:]
    assert retraction == ("retraction", deposit["id"], None)
    assert replacement[0] == "deposit" and replacement[2] == 300
    assert replacement[1] != deposit["id"]
