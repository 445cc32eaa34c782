"""The trace reads of balance reconciliation over JSON-RPC: a provider without tracing
is not an outage (the deposits keep their block identity), any other error is."""

from __future__ import annotations

import orjson
import pytest

from intentd.adapters.evm.json_rpc import JsonRpcClient, RpcError
from intentd.adapters.evm.state_reader import EvmChainState


class Answers:
    """Answers every call of a POST with one JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        self.error = {"code": code, "message": message}
        self.posts = 0

    async def post(self, url: str, body: bytes, seconds: float) -> tuple[int, bytes]:
        self.posts += 1
        calls = orjson.loads(body)
        return 200, orjson.dumps(
            [{"jsonrpc": "2.0", "id": c["id"], "error": self.error} for c in calls]
        )

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32601, "the method debug_traceBlockByHash does not exist/is not available"),
        (-32604, "method not supported"),
        (-32000, "Unsupported method: debug_traceBlockByHash"),
    ],
)
async def test_a_provider_that_does_not_trace_answers_none_for_every_block(
    code: int, message: str
) -> None:
    transport = Answers(code, message)
    state = EvmChainState(JsonRpcClient("TRACES", ["http://node"], transport=transport, attempts=2))
    assert await state.traces(["0x" + "1" * 64, "0x" + "2" * 64]) == [None, None]
    asked = transport.posts
    assert await state.traces(["0x" + "3" * 64]) == [None]
    assert transport.posts == asked  # not asked again at once


async def test_another_error_of_a_trace_is_raised_after_the_retries() -> None:
    transport = Answers(-32000, "header not found")
    state = EvmChainState(
        JsonRpcClient("TRACES", ["http://node"], transport=transport, attempts=2, backoff=0)
    )
    with pytest.raises(RpcError, match="header not found"):
        await state.traces(["0x" + "1" * 64])
    assert transport.posts == 2
