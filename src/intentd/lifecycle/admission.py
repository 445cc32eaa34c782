"""What a chain message must satisfy before the lifecycle applies it (pure).

A deposit or retraction arrives on ``<prefix>.deposits.<CHAIN>``; anyone who can write
to that topic could claim any chain in the body. Applying it as written would credit a
transfer on one chain to an intent paid on another, so the lifecycle trusts a message
only if its ``chain`` is the topic's chain, that chain is configured, and (deposits)
its ``chain_id`` is the configured one. A message that fails goes to the dead-letter
topic with the reason this module returns; it is never applied.

An action result moves money too (a ``confirmed`` prefill completes the intent and
pays the relayer back from the deposit; a ``failed`` one refunds the user), so it
is applied only if it agrees with what the executor recorded in the same
transaction as the result (:mod:`intentd.adapters.postgres.action_evidence`): the action
exists for that intent, kind and chain; ``sent`` names a transfer of that action
that was sent; ``confirmed`` names the action's confirmed transfer with its figures;
``failed`` is about an action that failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from intentd.lifecycle.ports import ActionFacts
from intentd.messages import ActionResultMessage, DepositMessage, RetractionMessage

__all__ = [
    "CHAIN_MISMATCH",
    "RESULT_MISMATCH",
    "MessageRefused",
    "chain_of_topic",
    "refusal",
    "result_refusal",
]

CHAIN_MISMATCH = "chain_mismatch"
"""Reason code of a chain message whose chain does not match its topic or the config."""
RESULT_MISMATCH = "result_mismatch"
"""Reason code of an action result that disagrees with what the executor recorded."""


class ConfiguredChain(Protocol):
    """What admission needs of a configured chain (``ChainBook``'s, or the settings')."""

    @property
    def chain_id(self) -> int: ...


class MessageRefused(Exception):
    """A message this module refuses; ``str(exc)`` is the dead-letter reason."""


def chain_of_topic(topic: str, prefix: str) -> str | None:
    """``CHAIN`` of ``<prefix>.deposits.<CHAIN>``; None for any other topic."""
    head = f"{prefix}.deposits."
    return topic[len(head) :] if topic.startswith(head) and len(topic) > len(head) else None


def refusal(
    message: DepositMessage | RetractionMessage,
    topic: str,
    prefix: str,
    chains: Mapping[str, ConfiguredChain],
) -> str | None:
    """Why ``message``, read from ``topic``, must not be applied; None if it may be."""
    topic_chain = chain_of_topic(topic, prefix)
    if topic_chain is None:
        return f"{CHAIN_MISMATCH}: {message.kind} read from {topic!r}, not a deposits topic"
    if message.chain != topic_chain:
        return (
            f"{CHAIN_MISMATCH}: {message.kind} {message.id} says chain {message.chain!r}"
            f" on the topic of {topic_chain!r}"
        )
    config = chains.get(message.chain)
    if config is None:
        return f"{CHAIN_MISMATCH}: chain {message.chain!r} is not configured"
    if isinstance(message, DepositMessage) and message.chain_id != config.chain_id:
        return (
            f"{CHAIN_MISMATCH}: deposit {message.id} says chain_id {message.chain_id};"
            f" {message.chain} is configured as {config.chain_id}"
        )
    return None


def result_refusal(message: ActionResultMessage, facts: ActionFacts | None) -> str | None:
    """Why ``message`` must not be applied, given the executor's record of its action
    (None if no such action); None if it may be."""
    head = f"{RESULT_MISMATCH}: {message.id}"
    if facts is None:
        return f"{head}: action {message.action_id} does not exist"
    claimed = (message.intent_id, message.action_kind, message.chain)
    recorded = (facts.intent_id, facts.kind, facts.chain)
    if claimed != recorded:
        return f"{head}: (intent, kind, chain) {claimed} but the action has {recorded}"
    if message.event == "failed":
        if facts.status != "failed":
            return f"{head}: the action is {facts.status}, not failed"
        return None
    if message.tx_hash is None or not facts.transfer_sent:
        return f"{head}: no sent transfer {message.tx_hash} of the action is recorded"
    if message.event == "confirmed":
        figures = (facts.status, facts.tx_hash, facts.amount_sent, facts.gas_cost)
        if figures != ("confirmed", message.tx_hash, message.amount_sent, message.gas_cost):
            return f"{head}: (status, tx_hash, amount_sent, gas_cost) recorded as {figures}"
    return None
