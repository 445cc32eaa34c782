"""A merchant's intent lived through the real domain (``domain.intent.Intent``), its
actions executed as the executor would, and the books the reconciliation reads.

``play(data)`` draws one intent's life with hypothesis: payments (exact, over, in parts),
wrong-token and late deposits above and below ``min_sweep``, fees of 0, 1, just below
and at ``min_sweep`` or more, with a fee account or none, then a path (completed,
prefill failed before or after broadcast, expired, cancelled, refunded on request), and
executes the actions with signed bytes (RLP of a type-2 transaction, as
``adapters.evm.signer`` records them) and receipts' gas; some may be left open (ready,
submitted, failed: still held at the address). ERC-20 sweeps get a gas top-up from the
gas tank first; native sweeps pay their gas out of their amount. The gas figures are
small (a sweep reserves ``GAS_LIMIT * MAX_FEE`` = 15 base units) so that ``min_sweep``
covers them, as the real defaults do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import rlp
from hypothesis import strategies as st

from intentd.domain.actions import NATIVE
from intentd.domain.deposits import Deposit, Disposition
from intentd.domain.intent import Intent, RefundReason, Terms
from intentd.domain.status import FundingStatus, IntentStatus
from intentd.reports.books import (
    ActionRecord,
    DepositRecord,
    IntentBooks,
    IntentTerms,
    TxRecord,
)
from intentd.reports.signed_transfers import decode
from intentd.settings import Settings

SOURCE, DESTINATION = "BASE_TESTNET", "ARBITRUM_TESTNET"
USDC, USDT, USDC_OUT = "0x" + "a" * 40, "0x" + "b" * 40, "0x" + "d" * 40
RELAYER, FEE_ACCOUNT, REFUND_TO = "0x" + "1" * 40, "0x" + "2" * 40, "0x" + "3" * 40
RECIPIENT, ADDRESS, PAYER = "0x" + "4" * 40, "0x" + "5" * 40, "0x" + "6" * 40
GAS_TANK = "0x" + "7" * 40
EXPIRES = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
MIN_SWEEP = 25
TRANSFER = bytes.fromhex("a9059cbb")
GAS_LIMIT, MAX_FEE = 5, 3
ENDING = ("expired", "failed", "cancelled", "merchant")


def signed_bytes(to: str, value: int, data: bytes, nonce: int) -> bytes:
    """A type-2 transaction's bytes with a dummy signature (nothing here verifies it)."""
    fields = [84532, nonce, 1, MAX_FEE, GAS_LIMIT, bytes.fromhex(to[2:]), value, data, [], 1, 7, 9]
    return b"\x02" + rlp.encode(fields)


def transfer_data(to: str, amount: int) -> bytes:
    return TRANSFER + bytes(12) + bytes.fromhex(to[2:]) + amount.to_bytes(32, "big")


@dataclass
class World:
    """One intent, and its deposits, actions and transactions as the store holds them."""

    intent: Intent
    token_in: str
    fees: int
    deposits: list[DepositRecord] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)
    transactions: list[TxRecord] = field(default_factory=list)
    nonce: int = 0

    def pay(
        self, amount: int, *, token: str | None = None, chain: str = SOURCE, late: bool = False
    ) -> None:
        token = token or self.token_in
        time = EXPIRES + timedelta(seconds=1) if late else EXPIRES - timedelta(hours=1)
        tx = f"0x{len(self.deposits):064x}"
        deposit = Deposit(chain, tx, 0, 1, "0x", time, token, PAYER, ADDRESS, amount)
        before = len(self.intent.actions)
        decision = self.intent.apply_deposit(deposit, token_supported=True, min_sweep=MIN_SWEEP)
        record = DepositRecord(
            len(self.deposits) + 1,
            chain,
            token,
            amount,
            decision.disposition.value,
            decision.reason.value if decision.reason else None,
        )
        self.deposits.append(record)
        linked = record.id if decision.disposition is Disposition.REFUND_OWED else None
        self._record_actions(before, linked)

    def act(self, step: str) -> None:
        """One decision of the intent (and the executor's report that caused it)."""
        before = len(self.intent.actions)
        if step == "sent":
            self.intent.prefill_sent(tx_hash="0x" + "f" * 64, relayer=RELAYER)
        elif step in {"confirmed", "confirmed_no_fee_account"}:
            self.execute(self._prefill(), gas_used=5, price=2)
            fee_account = "" if step == "confirmed_no_fee_account" else FEE_ACCOUNT
            self.intent.prefill_confirmed(block_number=9, fee_account=fee_account)
        elif step == "failed":
            self.actions[self._prefill()] = replace(self.actions[self._prefill()], status="failed")
            self.intent.prefill_failed()
        elif step == "expire":
            self.intent.expire(EXPIRES + timedelta(minutes=5))
        elif step == "cancel":
            self.intent.cancel()
        elif step == "refund":
            index = self._prefill()
            self.actions[index] = replace(self.actions[index], status="cancelled")
            self.intent.refund_on_request()
        self._record_actions(before)

    def execute(self, index: int, *, gas_used: int, price: int, status: str = "confirmed") -> None:
        """Run ready action ``index`` to ``status`` (confirmed, or left ready, submitted,
        failed); a confirmed one gets its signed transfer and receipt figures."""
        action = self.actions[index]
        if action.status != "ready" or status == "ready":
            return
        if status != "confirmed":
            self.actions[index] = replace(action, status=status)
            return
        signer = RELAYER if action.kind == "prefill" else ADDRESS
        if action.token == NATIVE:
            sent = action.amount - (GAS_LIMIT * MAX_FEE if action.gas_from_amount else 0)
            raw = signed_bytes(action.to_address, sent, b"", self.nonce)
        else:
            sent = action.amount
            raw = signed_bytes(
                action.token, 0, transfer_data(action.to_address, action.amount), self.nonce
            )
            if signer == ADDRESS:  # the gas tank's top-up first: its coin, not the user's
                topup = signed_bytes(ADDRESS, 40, b"", 0)
                self.transactions.append(
                    TxRecord(action.id, "gas_topup", "confirmed", GAS_TANK, f"0x{index:063x}f",
                             decode(topup), 21_000, 1, None)
                )  # fmt: skip
        self.nonce += 1
        tx_hash = f"0x{self.nonce:064x}"
        tx = TxRecord(
            action.id, "transfer", "confirmed", signer, tx_hash, decode(raw), gas_used, price, None
        )
        self.transactions.append(tx)
        self.actions[index] = replace(
            action, status="confirmed", amount_sent=sent, gas_cost=tx.gas, tx_hash=tx_hash
        )
        if action.kind == "user_refund" and action.reason is not None:
            self.intent.refund_confirmed(
                reason=RefundReason(action.reason),
                chain=action.chain,
                token=action.token,
                amount=action.amount,
                amount_sent=sent,
                gas_cost=tx.gas,
                tx_hash=tx_hash,
            )

    def books(self) -> IntentBooks:
        intent, terms = self.intent, self.intent.terms
        return IntentBooks(
            IntentTerms(
                id=intent.id,
                address=ADDRESS,
                status=intent.status.value,
                source_chain=SOURCE,
                destination_chain=DESTINATION,
                token_in=self.token_in,
                token_out=terms.token_out,
                total_due=terms.total_due,
                fees=self.fees,
                amount_out=terms.amount_out,
                received=intent.received,
                refunded=intent.refunded,
                recipient=RECIPIENT,
                refund_address=REFUND_TO,
                relayer=intent.relayer,
                min_sweep=MIN_SWEEP,
            ),
            tuple(self.deposits),
            tuple(self.actions),
            tuple(self.transactions),
        )

    def _prefill(self) -> int:
        return next(i for i, a in enumerate(self.actions) if a.kind == "prefill")

    def _record_actions(self, before: int, deposit_id: int | None = None) -> None:
        for pending in self.intent.actions[before:]:
            self.actions.append(
                ActionRecord(
                    id=len(self.actions) + 1,
                    kind=pending.kind.value,
                    chain=pending.chain,
                    token=pending.token,
                    amount=pending.amount,
                    to_address=pending.to_address,
                    reason=pending.reason.value if pending.reason else None,
                    deposit_id=deposit_id,
                    status="ready",
                    gas_from_amount=pending.gas_from_amount,
                    amount_sent=None,
                    gas_cost=None,
                    tx_hash=None,
                )
            )


def new_world(*, native: bool, total: int, fees: int) -> World:
    token_in = NATIVE if native else USDC
    terms = Terms(
        SOURCE,
        DESTINATION,
        token_in,
        USDC_OUT,
        total,
        fees,
        total - fees,
        RECIPIENT,
        REFUND_TO,
        EXPIRES,
        min_sweep=MIN_SWEEP,
    )
    return World(Intent(1, terms, 0, IntentStatus.PENDING, FundingStatus.NONE, 0), token_in, fees)


STEPS = {
    "complete": ["sent", "confirmed"],
    "complete_no_fee_account": ["sent", "confirmed_no_fee_account"],
    "fail_before": ["failed"],
    "fail_after": ["sent", "failed"],
    "expire": ["expire"],
    "cancel": ["cancel"],
    "refund": ["refund"],
}
SIZES = [1, MIN_SWEEP - 1, MIN_SWEEP, 10**6]


def fund(world: World, data: st.DataObject, total: int) -> None:
    """Pay ``total`` in one to three parts, plus an excess of some size."""
    paid = 0
    for part in data.draw(st.lists(st.integers(1, total), max_size=2), label="parts"):
        if paid + part < total:
            world.pay(part)
            paid += part
    world.pay(total - paid + data.draw(st.sampled_from([0, *SIZES]), label="excess"))


def play(data: st.DataObject) -> World:
    """One intent's whole life, drawn by hypothesis."""
    native = data.draw(st.booleans(), label="native tokenIn")
    total = data.draw(st.integers(200, 10**9), label="total")
    fees = data.draw(st.sampled_from([0, 1, MIN_SWEEP - 1, MIN_SWEEP, total // 50]), label="fees")
    world = new_world(native=native, total=total, fees=fees)
    path = data.draw(st.sampled_from(sorted(STEPS)), label="path")
    if path in ("expire", "cancel"):
        held = data.draw(st.sampled_from([0, *SIZES[:3], total // 2]), label="held")
        if held:
            world.pay(held)
    else:
        fund(world, data, total)
    for amount in data.draw(st.lists(st.sampled_from(SIZES), max_size=2), label="wrong token"):
        world.pay(amount, token=USDT)
    for step in STEPS[path]:
        world.act(step)
    for amount in data.draw(st.lists(st.sampled_from(SIZES), max_size=2), label="late"):
        world.pay(amount, late=True)
    leave_open = data.draw(st.booleans(), label="leave some open")
    for index, action in enumerate(list(world.actions)):
        status = "confirmed"
        if leave_open and action.reason not in ENDING:
            status = data.draw(st.sampled_from(["confirmed", "ready", "submitted", "failed"]))
        world.execute(
            index,
            gas_used=data.draw(st.integers(1, GAS_LIMIT), label="gas used"),
            price=data.draw(st.integers(1, MAX_FEE), label="price"),
            status=status,
        )
    return world


def report_settings(*, explorer_url: str = "https://sepolia.basescan.org") -> Settings:
    """SOURCE with USDC and USDT (6 decimals, ``min_sweep`` 0.000025 = MIN_SWEEP) and an
    explorer; DESTINATION with USDC_OUT. No I/O: nothing is read from the chains."""

    def token(address: str, symbol: str) -> dict[str, object]:
        return {"address": address, "symbol": symbol, "name": symbol, "decimals": 6,
                "category": "stablecoin", "min_sweep": "0.000025"}  # fmt: skip

    chain = {"network": "test", "rpc_urls": ["http://a"], "relayer": RELAYER,
             "fee_account": FEE_ACCOUNT}  # fmt: skip
    return Settings.model_validate(
        {
            "database": {"url": "postgresql://x/y"},
            "kafka": {"bootstrap_servers": "k:1", "topic_prefix": "unit"},
            "chains": {
                SOURCE: {**chain, "chain_id": 84532, "explorer_url": explorer_url,
                         "tokens": [token(USDC, "USDC"), token(USDT, "USDT")]},
                DESTINATION: {**chain, "chain_id": 421614,
                              "tokens": [token(USDC_OUT, "USDC")]},
            },
        }
    )  # fmt: skip
