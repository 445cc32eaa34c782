"""trigger-processing's narrow reads (a fake node); its limits are tested on PostgreSQL
(tests/integration/api/test_api_trigger_limits.py)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.adapters.evm.rpc_fakes import FakeProvider, client
from tests.unit.chain.chain_fakes import FAKE_TOKEN, USDC, FakeChain, Transfer, address

from intentd.adapters.evm.window_logs import RANGES_PER_BATCH, IntentWindowReader, recipient_topic
from intentd.chain.blocks import BlockRange
from intentd.chain.errors import InconsistentAnswer
from intentd.chain.evm.addresses import WatchedAddresses
from intentd.chain.evm.coverage import LogsAnswer, UnprovenLogs
from intentd.chain.evm.decoding import TRANSFER_TOPIC, decode_headers, find_deposits
from intentd.scanning.window import token_deposits_of

INTENT = address(7)


class FilteringProvider(FakeProvider):
    """A node that applies ``eth_getLogs``' topic filter, and counts what it is asked."""

    def _node(self, method: str, params: list[Any]) -> dict[str, Any]:
        answer = super()._node(method, params)
        if method != "eth_getLogs" or "result" not in answer:
            return answer
        topics = params[0]["topics"]
        return {
            "result": [
                log
                for log in answer["result"]
                if all(t is None or t == log["topics"][i] for i, t in enumerate(topics))
            ]
        }

    def calls(self) -> list[tuple[str, list[Any]]]:
        return [(c["method"], c["params"]) for _, batch in self.posts for c in batch]


def week_of_blocks() -> FakeChain:
    """3,000 blocks, each with token transfers to others; three to the intent."""
    chain = FakeChain()
    for n in range(1, 3001):
        transfers = [Transfer(address(100 + n % 50), n, token=USDC, nonce=n)]
        if n in {10, 1500, 2999}:
            token = FAKE_TOKEN if n == 1500 else USDC
            transfers.append(Transfer(INTENT, n, token=token, nonce=n))
        chain.mine(*transfers)
    return chain


async def test_a_window_is_read_with_recipient_filtered_logs_and_finds_the_pollers_deposits() -> (
    None
):
    chain = week_of_blocks()
    provider = FilteringProvider(chain)
    reader = IntentWindowReader(
        client(provider, "TRIG_WINDOW"), [USDC, FAKE_TOKEN], max_log_range=100
    )
    window = BlockRange(1, chain.head)

    hits = await reader.transfers_to(INTENT, window)
    numbers = sorted({int(log["blockNumber"], 16) for a in hits for log in a.logs})
    logs = await reader.token_logs(numbers, anchor=window.last)
    headers = await reader.headers([*numbers, window.last])
    watched = WatchedAddresses([INTENT])
    found = token_deposits_of(
        hits, logs, headers, window, tokens={USDC, FAKE_TOKEN}, watched=watched
    )

    # The poller's read of the whole window finds the same deposits.
    poller = find_deposits(
        chain.blocks[1:], chain.logs(1, chain.head), window, {USDC, FAKE_TOKEN}, watched
    ).deposits
    assert found == poller and [d.block_number for d in found] == [10, 1500, 2999]
    calls = provider.calls()
    assert {m for m, _ in calls} == {"eth_getLogs", "eth_getBlockByNumber"}
    assert all(p[1] is False for m, p in calls if m == "eth_getBlockByNumber")
    ranged = [p[0] for m, p in calls if m == "eth_getLogs" and p[0]["fromBlock"] != p[0]["toBlock"]]
    assert len(ranged) == 30  # 3,000 blocks in ranges of 100
    assert all(q["topics"] == [TRANSFER_TOPIC, None, recipient_topic(INTENT)] for q in ranged)
    assert len(provider.posts) <= 30 // RANGES_PER_BATCH + 1 + 2


async def test_a_refused_range_is_split_and_the_narrower_width_kept() -> None:
    chain = week_of_blocks()
    provider = FilteringProvider(chain, log_limit=250)
    reader = IntentWindowReader(client(provider, "TRIG_SPLIT"), [USDC], max_log_range=1000)
    hits = await reader.transfers_to(INTENT, BlockRange(1, chain.head))
    assert [int(h["blockNumber"], 16) for a in hits for h in a.logs] == [10, 2999]
    assert reader.log_ranges.width <= 250


def answer(chain: FakeChain, blocks: BlockRange, logs: list[dict[str, Any]]) -> LogsAnswer:
    """``logs`` as answered for ``blocks`` by a node whose block ``blocks.last`` is
    ``chain``'s."""
    anchor = chain.blocks[blocks.last]["hash"]
    return LogsAnswer(blocks, logs, blocks.last, (anchor, anchor))


def test_a_hit_from_another_fork_than_the_header_read_is_inconsistent() -> None:
    chain = week_of_blocks()
    window = BlockRange(1, 10)
    hits = [log for log in chain.logs(1, 10) if log["topics"][2] == recipient_topic(INTENT)]
    answered = [answer(chain, window, hits)]
    chain.fork(5)
    chain.mine(count=10)
    logs = [answer(chain, BlockRange(10, 10), chain.logs(10, 10))]
    headers = {10: decode_headers([chain.blocks[10]], BlockRange(10, 10))[0]}
    with pytest.raises(InconsistentAnswer):
        token_deposits_of(
            answered, logs, headers, window, tokens={USDC}, watched=WatchedAddresses([INTENT])
        )


def test_filtered_logs_must_cover_the_window_and_be_anchored_at_its_last_block() -> None:
    chain = week_of_blocks()
    window = BlockRange(1, 20)
    headers = {n: decode_headers([chain.blocks[n]], BlockRange(n, n))[0] for n in (10, window.last)}
    hits = [log for log in chain.logs(1, 20) if log["topics"][2] == recipient_topic(INTENT)]
    logs = [answer(chain, BlockRange(10, 10), chain.logs(10, 10))]
    watched = WatchedAddresses([INTENT])
    whole = [answer(chain, window, hits)]
    [found] = token_deposits_of(whole, logs, headers, window, tokens={USDC}, watched=watched)
    assert found.block_number == 10
    short = [answer(chain, BlockRange(1, 15), hits)]  # a range short of the window
    with pytest.raises(InconsistentAnswer, match="do not cover"):
        token_deposits_of(short, logs, headers, window, tokens={USDC}, watched=watched)
    other = [LogsAnswer(window, hits, window.last, ("0x" + "e" * 64,) * 2)]  # another fork
    with pytest.raises(UnprovenLogs):
        token_deposits_of(other, logs, headers, window, tokens={USDC}, watched=watched)
    with pytest.raises(InconsistentAnswer, match="not all read"):  # a hit block's logs missing
        token_deposits_of(whole, [], headers, window, tokens={USDC}, watched=watched)
