"""Does an action agree with the transactions recorded for it? (Check 4 of the
reconciliation.)

Pure. An action that is ``confirmed`` has exactly one confirmed transfer; any other has
none. Each confirmed transfer's recorded bytes must send the action's token and amount
to the action's address, signed by the expected signer; a confirmed action names that
transaction's hash, its ``amount_sent`` is what the bytes moved and its ``gas_cost``
the receipt's (gas used x price + L1 data fee). A native sweep that pays its gas from
its amount sends ``amount - gas_limit x max_fee - L1 reserve``: the reserve is 0 where
the chain charged no L1 data fee (no ``l1_fee`` in the receipt), else at least the fee
charged (docs/execution.md, Native sweep).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from intentd.reports.books import ActionRecord, TxRecord
from intentd.reports.signed_transfers import Transfer, transfer_of

__all__ = ["TransferCheck", "check_transfers"]


@dataclass
class TransferCheck:
    expected: int
    """Confirmed transfers the action's status calls for (1 if confirmed, else 0)."""
    count: int = 0
    moved: list[Transfer] = field(default_factory=list)
    """What each confirmed transfer moved (those whose bytes decode)."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(transaction hash, what is wrong with it)."""


def check_transfers(action: ActionRecord, txs: Iterable[TxRecord], *, signer: str) -> TransferCheck:
    """The action's confirmed transfers against the action; ``signer``: who must have
    signed them ("" for anyone)."""
    confirmed = [t for t in txs if t.purpose == "transfer" and t.status == "confirmed"]
    found = TransferCheck(expected=1 if action.status == "confirmed" else 0, count=len(confirmed))
    for tx in confirmed:
        if tx.signed is None:
            found.problems.append((tx.tx_hash, "its recorded bytes do not decode"))
            continue
        transfer = transfer_of(tx.signed)
        found.moved.append(transfer)
        problems = _problems(action, tx, transfer, signer)
        if problems:
            found.problems.append((tx.tx_hash, "; ".join(problems)))
    return found


def _problems(action: ActionRecord, tx: TxRecord, transfer: Transfer, signer: str) -> list[str]:
    problems = []
    if signer and tx.signer != signer:
        problems.append(f"signed by {tx.signer}, not {signer}")
    if (transfer.token, transfer.recipient) != (action.token, action.to_address):
        problems.append(
            f"pays {transfer.token} to {transfer.recipient}, not {action.token} to"
            f" {action.to_address}"
        )
    if action.status == "confirmed":
        if tx.tx_hash != action.tx_hash:
            problems.append(f"the action names {action.tx_hash}")
        if action.amount_sent != transfer.amount:
            problems.append(f"amount_sent {action.amount_sent}, moved {transfer.amount}")
        if action.gas_cost != tx.gas:
            problems.append(f"gas_cost {action.gas_cost}, the receipt's {tx.gas}")
        if not action.gas_from_amount and transfer.amount != action.amount:
            problems.append(f"moved {transfer.amount}, decided {action.amount}")
    if action.gas_from_amount:
        problems += _reserve_problems(action, tx)
    return problems


def _reserve_problems(action: ActionRecord, tx: TxRecord) -> list[str]:
    signed = tx.signed
    assert signed is not None
    reserve = action.amount - signed.value - signed.gas_limit * signed.max_fee_per_gas
    if tx.l1_fee is None and reserve != 0:
        return [
            f"sends {signed.value} of {action.amount} with a gas reserve of"
            f" {signed.gas_limit} x {signed.max_fee_per_gas}: {reserve} unexplained"
        ]
    if reserve < (tx.l1_fee or 0):
        return [f"leaves an L1 fee reserve of {reserve} for an L1 fee of {tx.l1_fee}"]
    return []
