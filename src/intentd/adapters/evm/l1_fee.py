"""The OP-stack L1 data fee of a transaction, asked of the chain's GasPriceOracle.

On an OP-stack chain (``chains.<NAME>.l1_fee = "op_stack"``: BASE, OP) the sender pays
an L1 data fee on top of ``gas_used * price``, set by the transaction's size and by L1
prices, and op-geth refuses a transaction whose sender cannot pay ``value + gas_limit *
maxFeePerGas + L1 fee``. A native sweep must leave it out of its value
(docs/execution.md, Who pays for gas). This is the executor's
:class:`~intentd.execution.ports.L1Fees` port.

Guarantees:

- For a chain whose ``l1_fee`` is ``none``, :func:`l1_fees_for` answers ``NO_L1_FEE``
  (``execution.transfer_planner``: 0, no call): a chain without the oracle (anvil,
  Arbitrum) is never asked.
- :class:`OpStackL1Fees` answers the GasPriceOracle predeploy's
  ``getL1FeeUpperBound(size)`` (Fjord and later) at the latest block, where ``size`` is
  the unsigned transaction's length with the largest nonce (the nonce is allocated
  after planning; a smaller one only shortens it). That bound assumes the worst
  compression of the bytes; it is not a bound on L1 prices, which the caller's margin
  covers. It raises ``L1FeeUnavailable`` (``execution.ports``) when the oracle gives
  no bound (no contract there, a revert, a malformed answer): the caller must not sign
  then (fail closed). Transport errors propagate; the caller tries again later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

from intentd.adapters.evm.json_rpc import MissingResult, RpcError
from intentd.execution.ports import L1Fees, L1FeeUnavailable
from intentd.execution.transfer_planner import NO_L1_FEE
from intentd.execution.tx_plans import TxPlan
from intentd.settings import ChainConfig

__all__ = [
    "GAS_PRICE_ORACLE",
    "OpStackL1Fees",
    "l1_fees_for",
    "unsigned_size",
]

GAS_PRICE_ORACLE: Final = "0x420000000000000000000000000000000000000f"
"""The OP-stack GasPriceOracle predeploy."""
UPPER_BOUND_SELECTOR: Final = "0xf1c7a58b"
"""``getL1FeeUpperBound(uint256)``."""
MAX_NONCE: Final = 2**64 - 1
"""The largest nonce a transaction can carry (EIP-2681): the longest encoding."""


class _Rpc(Protocol):
    async def call(
        self, method: str, params: Sequence[Any], *, allow_null: bool = False
    ) -> Any: ...


class OpStackL1Fees:
    """The L1 data fee bound of an OP-stack chain's transactions, from its oracle."""

    def __init__(self, rpc: _Rpc, chain_id: int) -> None:
        self._rpc = rpc
        self._chain_id = chain_id

    async def upper_bound(self, plan: TxPlan) -> int:
        size = unsigned_size(plan, self._chain_id)
        data = UPPER_BOUND_SELECTOR + size.to_bytes(32, "big").hex()
        try:
            answer = await self._rpc.call(
                "eth_call", [{"to": GAS_PRICE_ORACLE, "data": data}, "latest"]
            )
        except (RpcError, MissingResult) as exc:
            raise L1FeeUnavailable(f"GasPriceOracle.getL1FeeUpperBound({size}): {exc}") from None
        if not isinstance(answer, str) or len(answer) != 66 or not answer.startswith("0x"):
            raise L1FeeUnavailable(
                f"GasPriceOracle.getL1FeeUpperBound({size}) answered {str(answer)[:80]!r}:"
                ' no oracle at 0x42…0f (is l1_fee = "op_stack" right for this chain?)'
            )
        return int(answer, 16)


def l1_fees_for(chain: ChainConfig, rpc: _Rpc) -> L1Fees:
    """What the chain's ``l1_fee`` setting says to use."""
    if chain.l1_fee == "op_stack":
        return OpStackL1Fees(rpc, chain.chain_id)
    return NO_L1_FEE


def unsigned_size(plan: TxPlan, chain_id: int, nonce: int = MAX_NONCE) -> int:
    """Bytes of ``0x02 || rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas,
    gasLimit, to, value, data, accessList])`` for ``plan`` (an empty access list)."""
    fees = plan.fees
    payload = (
        sum(
            _int_size(number)
            for number in (
                chain_id,
                nonce,
                fees.max_priority_fee_per_gas,
                fees.max_fee_per_gas,
                plan.gas_limit,
            )
        )
        + _bytes_size(bytes.fromhex(plan.to[2:]))
        + _int_size(plan.value)
        + _bytes_size(plan.data)
        + 1  # the empty access list, 0xc0
    )
    return 1 + _header_size(payload) + payload


def _int_size(number: int) -> int:
    if number < 0:
        raise ValueError(f"negative transaction field {number}")
    return _bytes_size(number.to_bytes((number.bit_length() + 7) // 8, "big"))


def _bytes_size(data: bytes) -> int:
    if len(data) == 1 and data[0] < 0x80:
        return 1
    return _header_size(len(data)) + len(data)


def _header_size(length: int) -> int:
    """RLP prefix of a string or list of ``length`` bytes."""
    if length <= 55:
        return 1
    return 1 + (length.bit_length() + 7) // 8
