"""Why a payment is waiting, from what intentd knows (pure).

:func:`why_waiting` reads the intent's status and money, its open actions and their
transactions, the holds a reorg put on its deposits, and what is known of each chain
(the poller's progress, whether an executor holds the chain's lease), and answers the
reasons in the order a merchant should read them; nothing for an intent that has
ended. Each reason carries the figures its sentence needs (the console's strings
table words them): confirmations as *k of n*, what is missing, until when.

An action's ``last_error`` is the executor's word for why it waits
(``execution.starting``: the second provider, the fee cap, the relayer's balance), with
a stable code (``domain.wait_codes``); :func:`classify_error` matches the code exactly,
never words of the text, and the text is shown without it. A chain whose poller has not advanced for
:data:`STALE_AFTER` (or 50 poll intervals, if longer) is taken as unreachable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from intentd.domain.amounts import format_amount
from intentd.domain.status import IntentStatus
from intentd.domain.wait_codes import WaitCode, wait_code, wait_text

__all__ = [
    "ActionFact",
    "ChainFact",
    "Facts",
    "Reason",
    "TxFact",
    "Why",
    "classify_error",
    "why_waiting",
]

STALE_AFTER = timedelta(seconds=120)
_TERMINAL = frozenset(
    {IntentStatus.COMPLETED, IntentStatus.EXPIRED, IntentStatus.REFUNDED, IntentStatus.CANCELLED}
)
_OPEN = frozenset({"ready", "held", "submitted"})


class Reason(StrEnum):
    APPROVAL_PENDING = "approval_pending"
    """A refund of it waits for a second person's approval."""
    AWAITING_PAYMENT = "awaiting_payment"
    """Nothing received yet; it takes payments until it expires."""
    UNDERPAID = "underpaid"
    """Part of the amount received; ``missing`` still due."""
    WAITING_TO_EXPIRE = "waiting_to_expire"
    """Past ``expires_at`` unpaid; it expires after the grace (a payment mined in time
    may still be read)."""
    HELD_BY_REORG = "held_by_reorg"
    """A deposit was removed by a reorg deeper than the confirmations; its spending
    waits until the deposit is back on chain."""
    AWAITING_SECOND_PROVIDER = "awaiting_second_provider"
    """A large payment waits for the second provider to confirm it before the prefill."""
    RELAYER_SHORT = "relayer_short"
    """The relayer has too little on the destination chain to prefill."""
    FEES_ABOVE_CAP = "fees_above_cap"
    """Gas fees are above the chain's ``max_fee_per_gas``."""
    NO_EXECUTOR = "no_executor"
    """Work is due on a chain whose executor is not running."""
    RPC_UNAVAILABLE = "rpc_unavailable"
    """A chain it waits on has not been read for a while (its RPC, or its poller, is down)."""
    AWAITING_EXECUTOR = "awaiting_executor"
    """Its transaction is about to be sent (the executor takes it in order)."""
    RETRYING = "retrying"
    """An attempt failed (``error``); the executor tries again."""
    TRANSACTION_PENDING = "transaction_pending"
    """Our transaction is sent, not yet mined."""
    AWAITING_CONFIRMATIONS = "awaiting_confirmations"
    """Our transaction is mined, ``k`` of ``n`` confirmations."""
    ACTION_FAILED = "action_failed"
    """An action failed for good; an operator has to look (docs/runbook.md)."""


class ErrorKind(StrEnum):
    SECOND_PROVIDER = "second_provider"
    RELAYER_SHORT = "relayer_short"
    FEE_CAP = "fee_cap"
    RPC = "rpc"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class TxFact:
    status: str
    """signed, sent, mined, confirmed, reverted, replaced, dropped."""
    block_number: int | None


@dataclass(frozen=True, slots=True)
class ActionFact:
    kind: str
    """prefill, user_refund, relayer_refund, fee_sweep."""
    chain: str
    status: str
    """ready, held, submitted, confirmed, failed, cancelled."""
    last_error: str | None = None
    attempts: int = 0
    txs: Sequence[TxFact] = ()


@dataclass(frozen=True, slots=True)
class ChainFact:
    confirmations: int
    poll_interval: float
    cursor_block: int | None = None
    """The last block the chain's poller processed (None: no poller has run)."""
    cursor_at: datetime | None = None
    executor_running: bool | None = None
    """Whether a process holds the chain's executor lease (None: unknown)."""


@dataclass(frozen=True, slots=True)
class Facts:
    status: IntentStatus
    received: int
    total_due: int
    decimals: int
    symbol: str
    source_chain: str
    destination_chain: str
    expires_at: datetime
    grace: timedelta
    now: datetime
    actions: Sequence[ActionFact] = ()
    holds: Sequence[str] = ()
    """Chains on which a deposit of the intent is orphaned (held by a reorg)."""
    chains: Mapping[str, ChainFact] = field(default_factory=dict)
    approval_pending: bool = False


@dataclass(frozen=True, slots=True)
class Why:
    reason: Reason
    params: Mapping[str, str | int] = field(default_factory=dict)


_KINDS = {
    WaitCode.SECOND_PROVIDER: ErrorKind.SECOND_PROVIDER,
    WaitCode.LIQUIDITY_SHORT: ErrorKind.RELAYER_SHORT,
    WaitCode.FEE_CAP: ErrorKind.FEE_CAP,
    WaitCode.NODE_LAGS: ErrorKind.RPC,
}
"""The wait codes the console has a reason for; any other error is shown as it is."""


def classify_error(error: str | None) -> ErrorKind | None:
    """What kind of wait an action's ``last_error`` reports (None: no error), by its
    code (``domain.wait_codes``), matched exactly; free text is :attr:`ErrorKind.OTHER`."""
    if not error:
        return None
    code = wait_code(error)
    return _KINDS.get(code, ErrorKind.OTHER) if code is not None else ErrorKind.OTHER


def _stale(chain: ChainFact | None, now: datetime) -> bool:
    if chain is None or chain.cursor_at is None:
        return False
    limit = max(STALE_AFTER, timedelta(seconds=50 * chain.poll_interval))
    return now - chain.cursor_at >= limit


def _confirmations(tx: TxFact, chain: ChainFact | None) -> Why:
    needed = chain.confirmations if chain is not None else 1
    if chain is None or chain.cursor_block is None or tx.block_number is None:
        return Why(Reason.AWAITING_CONFIRMATIONS, {"k": 0, "n": needed})
    depth = chain.cursor_block + needed - tx.block_number
    return Why(Reason.AWAITING_CONFIRMATIONS, {"k": max(0, min(depth, needed)), "n": needed})


def _action_reasons(action: ActionFact, facts: Facts) -> list[Why]:
    chain = facts.chains.get(action.chain)
    where = {"chain": action.chain, "kind": action.kind}
    if action.status == "failed":
        return [Why(Reason.ACTION_FAILED, {**where, "error": wait_text(action.last_error or "")})]
    if action.status == "held":
        return [Why(Reason.HELD_BY_REORG, {"chain": action.chain})]
    if action.status == "submitted":
        live = [t for t in action.txs if t.status in ("signed", "sent", "mined")]
        mined = [t for t in live if t.status == "mined"]
        if mined:
            return [_confirmations(max(mined, key=lambda t: t.block_number or 0), chain)]
        return [Why(Reason.TRANSACTION_PENDING, where)]
    if action.status != "ready":
        return []
    kind = classify_error(action.last_error)
    if kind is ErrorKind.SECOND_PROVIDER:
        return [Why(Reason.AWAITING_SECOND_PROVIDER, {"chain": facts.source_chain})]
    if kind is ErrorKind.RELAYER_SHORT:
        return [Why(Reason.RELAYER_SHORT, {"chain": action.chain})]
    if kind is ErrorKind.FEE_CAP:
        return [Why(Reason.FEES_ABOVE_CAP, {"chain": action.chain})]
    if kind is ErrorKind.RPC:
        return [Why(Reason.RPC_UNAVAILABLE, {"chain": action.chain})]
    if chain is not None and chain.executor_running is False:
        return [Why(Reason.NO_EXECUTOR, {"chain": action.chain})]
    if kind is ErrorKind.OTHER:
        error = wait_text(action.last_error or "")
        return [Why(Reason.RETRYING, {**where, "error": error, "attempts": action.attempts})]
    return [Why(Reason.AWAITING_EXECUTOR, where)]


def _pending_reasons(facts: Facts) -> list[Why]:
    amount = {"symbol": facts.symbol, "chain": facts.source_chain}
    if facts.now >= facts.expires_at:
        ends = facts.expires_at + facts.grace
        return [Why(Reason.WAITING_TO_EXPIRE, {**amount, "until": ends.isoformat()})]
    if facts.received == 0:
        until = facts.expires_at.isoformat()
        due = format_amount(facts.total_due, facts.decimals)
        return [Why(Reason.AWAITING_PAYMENT, {**amount, "until": until, "due": due})]
    missing = format_amount(facts.total_due - facts.received, facts.decimals)
    received = format_amount(facts.received, facts.decimals)
    return [Why(Reason.UNDERPAID, {**amount, "missing": missing, "received": received})]


def why_waiting(facts: Facts) -> list[Why]:
    """The reasons the intent waits, most pressing first; empty once it has ended."""
    if facts.status in _TERMINAL:
        return []
    found: list[Why] = []
    if facts.approval_pending:
        found.append(Why(Reason.APPROVAL_PENDING))
    found += [Why(Reason.HELD_BY_REORG, {"chain": chain}) for chain in sorted(set(facts.holds))]
    spending = {
        IntentStatus.FUNDED: ("prefill",),
        IntentStatus.INITIATED: ("prefill",),
        IntentStatus.REFUNDING: ("user_refund",),
        IntentStatus.PENDING: ("user_refund",),
    }[facts.status]
    if facts.status is IntentStatus.PENDING:
        found += _pending_reasons(facts)
    for action in facts.actions:
        if action.kind in spending and (action.status in _OPEN or action.status == "failed"):
            found += _action_reasons(action, facts)
    waited_on = {facts.source_chain} if facts.status is IntentStatus.PENDING else set()
    waited_on |= {a.chain for a in facts.actions if a.status in _OPEN and a.kind in spending}
    for chain in sorted(waited_on):
        if _stale(facts.chains.get(chain), facts.now):
            why = Why(Reason.RPC_UNAVAILABLE, {"chain": chain})
            if why not in found:
                found.append(why)
    unique: list[Why] = []
    for why in found:
        if why not in unique:
            unique.append(why)
    return unique
