"""What a chain read can fail with, whatever the family.

A node that gives no usable answer raises :class:`ChainUnavailable` (the adapters'
RPC errors are its subclasses), so every role can tell "the chain is unavailable,
retry" from a defect without naming an adapter. Answers that do not fit together
raise :class:`InconsistentAnswer`: the range is read again, nothing is skipped.
"""

from __future__ import annotations

__all__ = ["ChainUnavailable", "InconsistentAnswer", "NoAnswer"]


class ChainUnavailable(Exception):
    """The chain's nodes gave no usable answer: an error, a missing result, or none."""


class NoAnswer(ChainUnavailable):
    """No node answered at all (connection, timeout, malformed body): a request that
    changes state may or may not have arrived."""


class InconsistentAnswer(Exception):
    """The node's answers for one range do not fit together; read the range again."""
