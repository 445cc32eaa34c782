"""The executor's Keyring port on the real keyring: a plan signed by a signer kind is
a transaction from that signer's address, with the chain id and nonce asked."""

from __future__ import annotations

import pytest
from eth_account import Account
from eth_account.typed_transactions import TypedTransaction
from hexbytes import HexBytes
from tests.unit.execution.execution_fakes import keyring

from intentd.domain.actions import SignerKind
from intentd.execution.gas import Fees
from intentd.execution.ports import Keyring
from intentd.execution.tx_plans import Purpose, TxPlan

PLAN = TxPlan(
    purpose=Purpose.TRANSFER,
    to="0x" + "ab" * 20,
    value=12_345,
    data=b"",
    gas_limit=21_000,
    fees=Fees(max_fee_per_gas=2_000_000_000, max_priority_fee_per_gas=1_000_000_000),
)


@pytest.mark.parametrize(
    ("kind", "index"),
    [(SignerKind.RELAYER, None), (SignerKind.GAS_TANK, None), (SignerKind.INTENT, 7)],
)
def test_a_signed_plan_comes_from_the_signer_it_names(kind: SignerKind, index: int | None) -> None:
    keys: Keyring = keyring()

    signed = keys.sign(PLAN, kind, index, chain_id=84532, nonce=5)

    tx = Account.recover_transaction(signed.raw)
    assert tx.lower() == keys.address(kind, index)
    fields = TypedTransaction.from_bytes(HexBytes(signed.raw)).as_dict()
    assert (fields["chainId"], fields["nonce"], fields["value"]) == (84532, 5, 12_345)
    assert signed.tx_hash.startswith("0x") and signed.tx_hash == signed.tx_hash.lower()
    assert "SignedTx(" in repr(signed) and signed.raw.hex() not in repr(signed)
