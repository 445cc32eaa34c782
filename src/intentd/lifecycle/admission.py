"""What a chain message must satisfy before the lifecycle applies it (pure).

A deposit or retraction arrives on ``<prefix>.deposits.<CHAIN>``; anyone who can write
to that topic could claim any chain in the body. Applying it as written would credit a
transfer on one chain to an intent paid on another, so the lifecycle trusts a message
only if its ``chain`` is the topic's chain, that chain is configured, and (deposits)
its ``chain_id`` is the configured one. A message that fails goes to the dead-letter
topic with the reason this module returns; it is never applied.
"""

from __future__ import annotations

from collections.abc import Mapping

from intentd.messages import DepositMessage, RetractionMessage
from intentd.settings import ChainConfig

__all__ = ["CHAIN_MISMATCH", "chain_of_topic", "refusal"]

CHAIN_MISMATCH = "chain_mismatch"
"""Reason code of a chain message whose chain does not match its topic or the config."""


def chain_of_topic(topic: str, prefix: str) -> str | None:
    """``CHAIN`` of ``<prefix>.deposits.<CHAIN>``; None for any other topic."""
    head = f"{prefix}.deposits."
    return topic[len(head) :] if topic.startswith(head) and len(topic) > len(head) else None


def refusal(
    message: DepositMessage | RetractionMessage,
    topic: str,
    prefix: str,
    chains: Mapping[str, ChainConfig],
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
