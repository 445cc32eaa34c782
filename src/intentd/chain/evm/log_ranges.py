"""How wide an ``eth_getLogs`` query may be, learnt from the provider's refusals (pure)."""

from __future__ import annotations

__all__ = ["LogRangeSizer"]


class LogRangeSizer:
    """The widest ``eth_getLogs`` range worth trying, learnt from provider refusals.

    A refusal (the provider's range or result-size limit) halves the width below the
    refused range; after ``grow_after`` successes in a row at the current width it
    grows by a quarter, up to ``maximum``. So a provider limit costs a few split
    queries once, and a burst of dense blocks does not pin the width low forever.
    """

    def __init__(self, maximum: int, *, grow_after: int = 8) -> None:
        if maximum < 1 or grow_after < 1:
            raise ValueError("maximum and grow_after must be positive")
        self.maximum = maximum
        self.width = maximum
        self._grow_after = grow_after
        self._successes = 0

    def refused(self, span: int) -> None:
        """The provider refused a query over ``span`` blocks."""
        self.width = max(1, min(self.width, span // 2))
        self._successes = 0

    def succeeded(self, span: int) -> None:
        """A query over ``span`` blocks was answered."""
        if span < self.width:
            return
        self._successes += 1
        if self._successes >= self._grow_after and self.width < self.maximum:
            self.width = min(self.maximum, self.width + max(1, self.width // 4))
            self._successes = 0
