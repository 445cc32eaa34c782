"""What the relayer's float is made of, as the executor's ports carry it: balances read
from a node, the commitments of the records, and the rows stored (docs/execution.md,
"The relayer's float"). Data only: ``execution.ports`` (``Balances``) and
``execution.repositories`` (the others) speak them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from intentd.domain.actions import SignerKind

__all__ = ["Balances", "Commitments", "Exposure", "FloatRow"]


@dataclass(frozen=True, slots=True)
class Balances:
    """Balances read from one node in one request."""

    block: int
    """That node's head, read before the balances: they are at this block or newer."""
    amounts: dict[tuple[str, str], int]
    """(holder, token) to base units; the token is lowercase, or ``domain.actions.NATIVE``."""


@dataclass(frozen=True, slots=True)
class Commitments:
    """What the relayer's transfers already signed on a chain will take from it."""

    in_flight: dict[str, int]
    """Per token: the amounts of ``submitted`` prefills (a transfer of them may not be
    in a balance read now; a mined one not yet at depth is counted anyway)."""
    newest_paid: int
    """The newest block holding a final transfer of the relayer, confirmed or reverted (0:
    none): a balance read at a lower block misses money we know was paid (or gas a
    reverted one spent), and is not believed."""


@dataclass(frozen=True, slots=True)
class Exposure:
    """The relayer's commitments on a chain as the records say, at ``as_of``, per token."""

    as_of: datetime
    """The database's clock when the figures were read (one snapshot)."""
    reserved: dict[str, int] = field(default_factory=dict)
    """Prefills ``ready`` or ``submitted`` (``domain.liquidity``)."""
    owed: dict[str, int] = field(default_factory=dict)
    """Repayments of the relayer not confirmed (relayer refunds landing on this chain)."""
    overdue: dict[str, int] = field(default_factory=dict)
    """How many of those repayments are older than the overdue bound."""
    pending: dict[str, int] = field(default_factory=dict)
    """``amount_out`` of PENDING intents with this chain as their destination."""
    newest_paid: int = 0


@dataclass(frozen=True, slots=True)
class FloatRow:
    """One row of ``relayer_float``: a holder's balance of a token with its figures."""

    holder: SignerKind
    token: str
    address: str
    balance: int
    block: int
    reserved: int = 0
    owed: int = 0
    owed_overdue: int = 0
    pending: int = 0
