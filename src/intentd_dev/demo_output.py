"""How ``make demo`` prints: a timestamped line per event, in colour on a terminal.

Guarantees: :func:`say` flushes each line at once (the demo's output interleaves with
the events as they arrive); colours only on a terminal; :func:`label` names an event as
the demo's checklist expects it (``funded EXACT``, ``refunded excess``, ``completed``).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

__all__ = ["BOLD", "DIM", "GREEN", "YELLOW", "color", "describe", "label", "say", "stamp"]

BOLD, DIM, GREEN, YELLOW, RESET = "\033[1m", "\033[2m", "\033[32m", "\033[33m", "\033[0m"


def say(text: str) -> None:
    print(text, flush=True)


def color(text: str, code: str) -> str:
    return f"{code}{text}{RESET}" if sys.stdout.isatty() else text


def stamp() -> str:
    return color(datetime.now().strftime("%H:%M:%S"), DIM)


def describe(event: dict[str, Any]) -> str:
    intent, data = event["intent"], event["data"]
    funding = data.get("funding", {})
    symbol = intent["asset_token_symbol"]
    line = f"{color(event['type'], BOLD)} intent #{intent['id']} [{intent['intent_status']}] "
    kind = event["type"]
    if kind == "intent_funded":
        line += (
            f"{funding.get('status')}: received {funding.get('received')} of "
            f"{funding.get('total')} {symbol}"
        )
        if funding.get("shortfall") not in (None, "0"):
            line += color(f", short {funding['shortfall']}", YELLOW)
        if funding.get("excess") not in (None, "0"):
            line += color(f", excess {funding['excess']} (refunded at initiation)", YELLOW)
        deposit = data.get("deposit")
        if deposit:
            line += color(f"  tx {deposit['tx_hash'][:14]}… on {deposit['chain']}", DIM)
    elif kind == "intent_initiated":
        line += f"prefill sent: {intent['destination_chain']} pays the recipient" + color(
            f"  tx {data['prefill']['tx_hash'][:14]}…", DIM
        )
    elif kind == "intent_completed":
        line += "prefill confirmed: the recipient has the funds; relayer repaid from the deposit"
    elif kind == "intent_expired":
        line += f"expired with nothing to refund (received {funding.get('received')} {symbol})"
    elif kind == "intent_refunded":
        refund = data["refund"]
        line += (
            f"refund ({refund['reason']}): {refund['amount_sent']} of {refund['amount']} sent back"
            f" on {refund['chain']}" + color(f"  tx {refund['tx_hash'][:14]}…", DIM)
        )
    return line


def label(event: dict[str, Any]) -> str:
    """What an event means for the demo's checklist."""
    if event["type"] == "intent_funded":
        return f"funded {event['data']['funding']['status']}"
    if event["type"] == "intent_refunded":
        return f"refunded {event['data']['refund']['reason']}"
    return str(event["type"]).removeprefix("intent_")
