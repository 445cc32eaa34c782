"""What applying one fact did (:class:`Outcome`), and the refusal of one that cannot be."""

from __future__ import annotations

from enum import StrEnum

from intentd.domain.deposits import Disposition

__all__ = ["Outcome", "Unappliable"]


class Unappliable(ValueError):
    """A well-formed message that contradicts the store (it goes to the dead-letter topic)."""


class Outcome(StrEnum):
    CREDITED = "credited"
    REFUND_OWED = "refund_owed"
    IGNORED = "ignored"
    UNMATCHED = "unmatched"
    INTERNAL = "internal"
    DUPLICATE = "duplicate"
    RELOCATED = "relocated"
    RETRACTED = "retracted"
    RETAINED = "retained"
    RETRACTION_NOOP = "retraction_noop"
    RETRACTION_ALERT = "retraction_alert"
    APPLIED = "applied"
    STALE = "stale"
    EXPIRED = "expired"
    NOT_DUE = "not_due"

    @classmethod
    def recorded(cls, disposition: Disposition) -> Outcome:
        """The outcome of a deposit newly recorded with ``disposition``."""
        return _RECORDED[disposition]


_RECORDED = {
    Disposition.CREDITED: Outcome.CREDITED,
    Disposition.REFUND_OWED: Outcome.REFUND_OWED,
    Disposition.IGNORED: Outcome.IGNORED,
    Disposition.UNMATCHED: Outcome.UNMATCHED,
    Disposition.INTERNAL: Outcome.INTERNAL,
    Disposition.RETAINED: Outcome.RETAINED,
    Disposition.RETRACTED: Outcome.RETRACTED,
}
