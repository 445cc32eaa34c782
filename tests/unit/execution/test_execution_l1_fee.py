"""A native sweep on an OP-stack chain leaves room for the L1 data fee.

On BASE the sender pays an L1 data fee on top of ``gas * price``, and op-geth refuses
a transaction whose sender cannot pay ``value + gas_limit * maxFeePerGas + L1 fee``.
anvil charges no L1 fee: the node and its oracle are synthetic here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import rlp
from hypothesis import given
from hypothesis import strategies as st

from intentd.adapters.evm.json_rpc import RpcError, RpcTransportError
from intentd.adapters.evm.l1_fee import GAS_PRICE_ORACLE, OpStackL1Fees, l1_fees_for, unsigned_size
from intentd.adapters.evm.signer import sign
from intentd.domain.actions import NATIVE, Action, ActionKind, SignerKind
from intentd.execution.gas import (
    NATIVE_TRANSFER_GAS,
    AmountBelowGas,
    Fees,
    gas_cost,
    l1_fee_reserve,
    native_sweep_value,
)
from intentd.execution.ports import L1Fees, L1FeeUnavailable
from intentd.execution.transfer_planner import NO_L1_FEE, TransferPlanner
from intentd.execution.tx_plans import Purpose, TxPlan, transfer_tx
from intentd.settings import ChainConfig, ExecutionConfig

GWEI = 10**9
L1_FEE = 3 * 10**12
"""What the node charges on top of gas for the sweep (synthetic; any fee above 0 is refused)."""
FEES = Fees(2 * GWEI // 100, GWEI // 1000)
USDC = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"


def op_geth_accepts(balance: int, plan: TxPlan, l1_fee: int) -> bool:
    """op-geth's admission rule: the sender covers value, worst-case gas and L1 fee."""
    return balance >= plan.value + plan.gas_limit * plan.fees.max_fee_per_gas + l1_fee


class FakeOracleNode:
    """A node whose GasPriceOracle answers ``answer`` (or raises ``error``)."""

    def __init__(self, answer: object = None, error: Exception | None = None) -> None:
        self.answer = "0x" + (L1_FEE).to_bytes(32, "big").hex() if answer is None else answer
        self.error = error
        self.calls: list[tuple[str, list[Any]]] = []

    async def call(self, method: str, params: Sequence[Any], *, allow_null: bool = False) -> Any:
        self.calls.append((method, list(params)))
        if self.error is not None:
            raise self.error
        return self.answer


def chain(chain_id: int = 8453, **changes: Any) -> ChainConfig:
    return ChainConfig(
        name="BASE", chain_id=chain_id, network="main", rpc_urls=["https://rpc.example"], **changes
    )


def planner(l1_fees: L1Fees, margin_bps: int = 2_500) -> TransferPlanner:
    """What the executor plans transfers with (first ones and replacements)."""
    config = ExecutionConfig(l1_fee_margin_bps=margin_bps)
    return TransferPlanner(l1_fees, l1_fee_margin_bps=config.l1_fee_margin_bps)


def action(amount: int, *, token: str = NATIVE, gas_from_amount: bool = True) -> Action:
    return Action(
        id=1,
        intent_id=1,
        kind=ActionKind.USER_REFUND,
        chain="BASE",
        token=token,
        amount=amount,
        to_address="0x" + "ab" * 20,
        signer_kind=SignerKind.INTENT,
        signer_index=7,
        gas_from_amount=gas_from_amount,
        attempts=0,
    )


async def test_a_native_sweep_on_an_op_stack_chain_leaves_room_for_its_l1_fee() -> None:
    sweep = action(10**15)  # the intent address holds exactly the amount
    plan = await planner(OpStackL1Fees(FakeOracleNode(), 8453)).transfer_plan(
        sweep, NATIVE_TRANSFER_GAS, FEES
    )
    assert op_geth_accepts(sweep.amount, plan, L1_FEE)
    # exactly the bound plus the 25 % margin is left at the address, besides the L2 gas
    l2_gas = NATIVE_TRANSFER_GAS * FEES.max_fee_per_gas
    assert sweep.amount - plan.value - l2_gas == L1_FEE * 5 // 4


async def test_the_old_plan_is_the_one_op_geth_refuses() -> None:
    """What the executor signed before: the whole amount less L2 gas; the L1 fee does not fit."""
    sweep = action(10**15)
    assert not op_geth_accepts(sweep.amount, transfer_tx(sweep, NATIVE_TRANSFER_GAS, FEES), 1)


async def test_the_oracle_is_asked_for_the_bound_of_the_signed_transactions_size() -> None:
    node = FakeOracleNode()
    sweep = action(10**15)
    await planner(OpStackL1Fees(node, 8453)).transfer_plan(sweep, NATIVE_TRANSFER_GAS, FEES)
    [(method, [call, block])] = node.calls
    draft = transfer_tx(sweep, NATIVE_TRANSFER_GAS, FEES)
    assert (method, call["to"], block) == ("eth_call", GAS_PRICE_ORACLE, "latest")
    assert call["data"] == "0xf1c7a58b" + unsigned_size(draft, 8453).to_bytes(32, "big").hex()


async def test_a_chain_without_an_l1_fee_is_never_asked() -> None:
    node = FakeOracleNode()
    fees = l1_fees_for(chain(421614), node)  # Arbitrum: l1_fee defaults to none
    assert fees is NO_L1_FEE
    sweep = action(10**15)
    plan = await planner(fees).transfer_plan(sweep, NATIVE_TRANSFER_GAS, FEES)
    assert plan == transfer_tx(sweep, NATIVE_TRANSFER_GAS, FEES)
    assert node.calls == []
    assert isinstance(l1_fees_for(chain(8453), node), OpStackL1Fees)
    assert l1_fees_for(chain(8453, l1_fee="none"), node) is NO_L1_FEE


@pytest.mark.parametrize(
    "sweep",
    [action(10**6, token=USDC), action(10**15, gas_from_amount=False)],
    ids=["erc20", "native paid by its signer"],
)
async def test_only_a_native_sweep_that_pays_its_own_gas_asks_the_oracle(sweep: Action) -> None:
    node = FakeOracleNode()
    plan = await planner(OpStackL1Fees(node, 8453)).transfer_plan(sweep, 50_000, FEES)
    assert plan == transfer_tx(sweep, 50_000, FEES)
    assert node.calls == []


@pytest.mark.parametrize(
    "node",
    [
        FakeOracleNode(answer="0x"),  # no contract at the predeploy address (a plain anvil)
        FakeOracleNode(answer="0x1234"),
        FakeOracleNode(error=RpcError("eth_call", 3, "execution reverted: only supports Fjord")),
    ],
    ids=["no oracle", "malformed", "revert"],
)
async def test_no_bound_means_no_plan(node: FakeOracleNode) -> None:
    with pytest.raises(L1FeeUnavailable):
        await planner(OpStackL1Fees(node, 8453)).transfer_plan(
            action(10**15), NATIVE_TRANSFER_GAS, FEES
        )


async def test_a_node_that_does_not_answer_is_a_transport_error_the_tick_retries() -> None:
    node = FakeOracleNode(error=RpcTransportError("timeout"))
    with pytest.raises(RpcTransportError):
        await planner(OpStackL1Fees(node, 8453)).transfer_plan(
            action(10**15), NATIVE_TRANSFER_GAS, FEES
        )


async def test_an_amount_below_gas_and_l1_fee_waits_like_one_below_gas() -> None:
    too_small = NATIVE_TRANSFER_GAS * FEES.max_fee_per_gas + L1_FEE  # the margin does not fit
    with pytest.raises(AmountBelowGas):
        await planner(OpStackL1Fees(FakeOracleNode(), 8453)).transfer_plan(
            action(too_small), NATIVE_TRANSFER_GAS, FEES
        )


fields = st.tuples(
    st.integers(1, 2**64),  # chain id
    st.integers(0, 2**64 - 1),  # nonce
    st.integers(0, 2**80),  # tip
    st.integers(0, 2**80),  # max fee above the tip
    st.integers(21_000, 30_000_000),  # gas limit
    st.integers(0, 2**256 - 1),  # value
    st.binary(max_size=300),  # data
)


@given(fields)
def test_the_unsigned_size_is_that_of_the_rlp_encoding(
    tx: tuple[int, int, int, int, int, int, bytes],
) -> None:
    chain_id, nonce, tip, extra, gas, value, data = tx
    fees = Fees(tip + extra + 1, tip)
    plan = TxPlan(Purpose.TRANSFER, "0x" + "ab" * 20, value, data, gas, fees)
    head = [chain_id, nonce, tip, fees.max_fee_per_gas, gas, bytes.fromhex("ab" * 20)]
    encoded = b"\x02" + rlp.encode([*head, value, data, []])
    assert unsigned_size(plan, chain_id, nonce) == len(encoded)
    assert unsigned_size(plan, chain_id) >= len(encoded)  # the default: the longest nonce


def test_the_size_bounds_what_is_signed() -> None:
    """The oracle adds 68 bytes for the signature to the unsigned size it is given."""
    plan = transfer_tx(action(10**15), NATIVE_TRANSFER_GAS, FEES)
    signed = sign(plan, chain_id=8453, nonce=5, private_key=b"\x01" * 32)
    assert len(signed.raw) <= unsigned_size(plan, 8453) + 68


def test_the_reserve_is_the_bound_plus_the_margin_rounded_up() -> None:
    assert l1_fee_reserve(3, 2_500) == 4  # 3.75 wei
    assert l1_fee_reserve(L1_FEE, 2_500) == L1_FEE * 5 // 4
    assert (l1_fee_reserve(0, 2_500), l1_fee_reserve(7, 0)) == (0, 7)
    with pytest.raises(ValueError, match="negative"):
        l1_fee_reserve(-1, 0)


@given(
    amount=st.integers(1, 10**21),
    fee=st.integers(1, 10**12),
    reserve=st.integers(0, 10**15),
    charged=st.integers(0, 10**15),
)
def test_a_sweep_whose_l1_fee_stays_within_its_reserve_is_affordable_and_adds_up(
    amount: int, fee: int, reserve: int, charged: int
) -> None:
    try:
        value = native_sweep_value(amount, NATIVE_TRANSFER_GAS, Fees(fee, 0), reserve)
    except AmountBelowGas:
        assert amount <= NATIVE_TRANSFER_GAS * fee + reserve
        return
    l2_worst = NATIVE_TRANSFER_GAS * fee
    assert value + l2_worst + reserve == amount
    if charged <= reserve:  # the node accepts it, and the rest stays at the address
        left = amount - value - gas_cost(NATIVE_TRANSFER_GAS, fee, charged)
        assert left == reserve - charged >= 0
