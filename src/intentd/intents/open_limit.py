"""How many intents awaiting payment one client may have at once (pure).

An intent awaiting payment (PENDING) costs until it ends: its address is watched by
every poller, and a native-coin intent's balance is read every batch by the poller of
its chain (docs/indexer.md). Creating one is free, and a merchant's public session
endpoint lets anyone create them in the merchant's name. So a client may have at most
``intents.max_open_per_client`` of them: a create that would give it one more is
refused with :class:`OpenIntentLimit` (409 ``open_intent_limit`` through the API and
sessions, exit 3 from the CLI), and nothing of it is written. A place frees when an
intent leaves PENDING: paid in full, expired or cancelled.

:func:`refused` decides it for the creates of one write; the intent writer's store
(``intents.ports.IntentSession.insert_within``) counts the clients' PENDING intents
and inserts in one transaction holding a lock per client, so that concurrent creates
of a client, in any process, are counted one after the other and the cap holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from uuid import UUID

from intentd.intents.validation import IntentConflict

__all__ = ["OpenIntentLimit", "refused"]


def refused(clients: Sequence[UUID], pending: Mapping[UUID, int], cap: int) -> list[bool]:
    """For each create, in order (``clients[i]`` is its client): whether it is refused.

    ``pending``: each client's PENDING intents before these creates (none if absent).
    A create fits while its client's count, with the earlier creates that fit, is below
    ``cap``; a refused one takes no place.
    """
    counts = dict(pending)
    answer = []
    for client in clients:
        held = counts.get(client, 0)
        answer.append(held >= cap)
        if held < cap:
            counts[client] = held + 1
    return answer


class OpenIntentLimit(IntentConflict):
    """The client already has its cap of intents awaiting payment; nothing was written."""

    def __init__(self, cap: int) -> None:
        super().__init__(
            "open_intent_limit",
            None,
            f"this client has reached its cap of {cap} intents awaiting payment (PENDING)"
            " at once; a place frees when one of them is paid, expires or is cancelled",
        )
        self.cap = cap
