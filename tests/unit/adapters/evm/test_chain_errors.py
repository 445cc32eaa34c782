"""The RPC errors of ``adapters.evm.chain_reader`` are the ports' node errors: every role retries
them as "the chain is unavailable", and only a missing answer counts as no answer (a
broadcast that may or may not have arrived)."""

from __future__ import annotations

import pytest

from intentd.adapters.evm.json_rpc import (
    MissingResult,
    RangeLimitError,
    RpcError,
    RpcTransportError,
    WrongChainError,
)
from intentd.chain.errors import ChainUnavailable, NoAnswer


@pytest.mark.parametrize(
    "error",
    [
        RpcError("eth_call", -32000, "boom"),
        RangeLimitError("eth_getLogs", -32005, "too many"),
        RpcTransportError("connection refused"),
        WrongChainError("chain 1, not 2"),
        MissingResult("eth_getBlockByNumber: null"),
    ],
)
def test_every_rpc_error_is_the_chain_being_unavailable(error: Exception) -> None:
    assert isinstance(error, ChainUnavailable)


def test_only_transport_errors_are_no_answer() -> None:
    assert isinstance(RpcTransportError("timeout"), NoAnswer)
    assert isinstance(WrongChainError("chain 1, not 2"), NoAnswer)
    assert not isinstance(RpcError("eth_sendRawTransaction", -32000, "nonce too low"), NoAnswer)
    assert not isinstance(MissingResult("null"), NoAnswer)
