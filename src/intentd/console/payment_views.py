"""How the console shows payments: a payment's detail, the overview, explorer links,
and the facts :mod:`intentd.console.waiting` reads (built from the adapters' rows).

Amounts are shown in whole units (exact decimal strings) with their symbol; a token
the configuration does not know is shown by address in base units. Explorer links
come from each chain's ``explorer_url`` (none when it is empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from eth_utils import to_checksum_address

from intentd.adapters.postgres.console_overview import DayTotal
from intentd.adapters.postgres.console_reads import ActionRow, ChainState, DeliveryRow, DepositRow
from intentd.adapters.postgres.refund_approvals import Approval
from intentd.console.waiting import ActionFact, ChainFact, Facts, TxFact, Why
from intentd.contract.record import IntentRow
from intentd.domain.amounts import format_amount
from intentd.domain.wait_codes import wait_text
from intentd.settings import NATIVE_TOKEN, Settings

__all__ = [
    "explorer",
    "facts_of",
    "render_actions",
    "render_deliveries",
    "render_deposits",
    "render_overview",
    "render_whys",
]


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def explorer(settings: Settings, chain: str, kind: str, value: str) -> str | None:
    """``{explorer_url}/tx/{hash}`` or ``/address/{address}``; None without an explorer."""
    config = settings.chains.get(chain)
    if config is None or not config.explorer_url:
        return None
    return f"{config.explorer_url}/{kind}/{value}"


def _token(settings: Settings, chain: str, address: str) -> tuple[str, int] | None:
    config = settings.chains.get(chain)
    token = config.token(address) if config is not None else None
    return (token.symbol, token.decimals) if token is not None else None


def _money(settings: Settings, chain: str, address: str, amount: int | None) -> dict[str, Any]:
    if amount is None:
        return {"amount": None, "symbol": None}
    known = _token(settings, chain, address)
    if known is None:
        return {"amount": str(amount), "symbol": None, "token": to_checksum_address(address)}
    symbol, decimals = known
    return {"amount": format_amount(amount, decimals), "symbol": symbol}


def _native(settings: Settings, chain: str, wei: int | None) -> dict[str, Any]:
    return _money(settings, chain, NATIVE_TOKEN, wei)


def render_deposits(settings: Settings, deposits: Sequence[DepositRow]) -> list[dict[str, Any]]:
    return [
        {
            "id": d.id,
            "chain": d.chain,
            "tx_hash": d.tx_hash,
            "explorer": explorer(settings, d.chain, "tx", d.tx_hash),
            "block_number": d.block_number,
            "block_time": _time(d.block_time),
            "from": to_checksum_address(d.from_address),
            **_money(settings, d.chain, d.token, d.amount),
            "disposition": d.disposition,
            "reason": d.reason,
            "held_by_reorg": d.orphaned_at is not None,
        }
        for d in deposits
    ]


def render_actions(settings: Settings, actions: Sequence[ActionRow]) -> list[dict[str, Any]]:
    return [
        {
            "id": a.id,
            "kind": a.kind,
            "chain": a.chain,
            **_money(settings, a.chain, a.token, a.amount),
            "to": to_checksum_address(a.to_address),
            "reason": a.reason,
            "status": a.status,
            "attempts": a.attempts,
            "last_error": wait_text(a.last_error) if a.last_error else a.last_error,
            "tx_hash": a.tx_hash,
            "explorer": explorer(settings, a.chain, "tx", a.tx_hash) if a.tx_hash else None,
            "sent": _money(settings, a.chain, a.token, a.amount_sent)["amount"],
            "gas_cost": _native(settings, a.chain, a.gas_cost),
            "created_at": _time(a.created_at),
            "updated_at": _time(a.updated_at),
            "transactions": [
                {
                    "tx_hash": t.tx_hash,
                    "explorer": explorer(settings, t.chain, "tx", t.tx_hash),
                    "purpose": t.purpose,
                    "status": t.status,
                    "nonce": t.nonce,
                    "block_number": t.block_number,
                    "gas_used": t.gas_used,
                    "gas_price_gwei": (
                        format_amount(t.effective_gas_price, 9)
                        if t.effective_gas_price is not None
                        else None
                    ),
                    "fee": _native(settings, t.chain, t.fee),
                    "created_at": _time(t.created_at),
                    "sent_at": _time(t.sent_at),
                }
                for t in a.txs
            ],
        }
        for a in actions
    ]


def render_deliveries(deliveries: Sequence[DeliveryRow]) -> list[dict[str, Any]]:
    return [
        {
            "id": d.id,
            "event_id": d.event_id,
            "event_type": d.event_type,
            "sequence": d.sequence,
            "endpoint_id": str(d.endpoint_id),
            "url": d.url,
            "status": d.status,
            "attempts": d.attempts,
            "next_attempt_at": _time(d.next_attempt_at),
            "tries": [
                {
                    "id": t.id,
                    "attempted_at": _time(t.attempted_at),
                    "status_code": t.status_code,
                    "latency_ms": t.latency_ms,
                    "error": t.error,
                    "response": t.response_head[:500],
                    "outcome": t.outcome,
                }
                for t in d.tries
            ],
        }
        for d in deliveries
    ]


def facts_of(
    settings: Settings,
    row: IntentRow,
    actions: Sequence[ActionRow],
    deposits: Sequence[DepositRow],
    chains: dict[str, ChainState],
    *,
    approval: Approval | None,
    now: datetime,
) -> Facts:
    return Facts(
        status=row.status,
        received=row.received,
        total_due=row.total_due,
        decimals=row.asset_token_decimals,
        symbol=row.asset_token_symbol,
        source_chain=row.source_chain,
        destination_chain=row.destination_chain,
        expires_at=row.expires_at,
        grace=timedelta(seconds=settings.intents.expiry_grace_seconds),
        now=now,
        actions=[
            ActionFact(
                kind=a.kind,
                chain=a.chain,
                status=a.status,
                last_error=a.last_error,
                attempts=a.attempts,
                txs=[TxFact(t.status, t.block_number) for t in a.txs],
            )
            for a in actions
        ],
        holds=[d.chain for d in deposits if d.orphaned_at is not None],
        chains={
            name: ChainFact(
                confirmations=settings.chains[name].confirmations,
                poll_interval=settings.chains[name].poll_interval,
                cursor_block=state.cursor_block,
                cursor_at=state.cursor_at,
                executor_running=state.executor_running,
            )
            for name, state in chains.items()
            if name in settings.chains
        },
        approval_pending=approval is not None and approval.status.value == "pending",
    )


def render_whys(whys: Sequence[Why]) -> list[dict[str, Any]]:
    return [{"reason": w.reason.value, "params": dict(w.params)} for w in whys]


def render_overview(
    totals: Sequence[DayTotal], live: dict[str, int], today: date
) -> dict[str, Any]:
    """Volume (completed intents) today and over the 30 days, by chain and token; counts
    by status (live ones now, ended ones over the 30 days)."""

    def volume(rows: Sequence[DayTotal]) -> list[dict[str, Any]]:
        groups: dict[tuple[str, str, int], list[DayTotal]] = {}
        for t in rows:
            if t.status == "COMPLETED":
                groups.setdefault((t.source_chain, t.symbol, t.decimals), []).append(t)
        return [
            {
                "chain": chain,
                "symbol": symbol,
                "count": sum(t.count for t in group),
                "amount": format_amount(sum(t.amount for t in group), decimals),
                "usd": str(sum((t.usd for t in group), Decimal(0)).quantize(Decimal("0.01"))),
            }
            for (chain, symbol, decimals), group in sorted(groups.items())
        ]

    ended: dict[str, int] = {}
    for t in totals:
        ended[t.status] = ended.get(t.status, 0) + t.count
    return {
        "today": volume([t for t in totals if t.day == today]),
        "days30": volume(totals),
        "live": live,
        "ended30": ended,
    }
