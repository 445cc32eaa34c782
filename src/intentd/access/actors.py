"""Who did something: a console user, an API key, the operator's CLI (pure).

Every audit record and every refund request names its :class:`Actor`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from intentd.access.roles import Role

__all__ = ["Actor", "ActorKind"]

ActorKind = Literal["user", "key", "cli", "system"]


@dataclass(frozen=True, slots=True)
class Actor:
    kind: ActorKind
    id: str
    """The user's or key's id; ``cli`` for the operator's command line."""
    label: str
    """What a person reads: the user's email, the key's prefix."""
    client_id: UUID
    source: str | None = None
    """The request's source address (None: not over HTTP)."""
    role: Role | None = None
    """A user's role when it acted."""

    @staticmethod
    def cli(client_id: UUID) -> Actor:
        return Actor("cli", "cli", "intentd command line", client_id)
