"""The ``[liquidity]`` section: how the relayer's float is read, and what it allows
(docs/execution.md, "The relayer's float"; docs/api.md, ``insufficient_liquidity``)."""

from __future__ import annotations

from pydantic import Field, model_validator

from intentd.settings.base import ConfigModel


class LiquidityConfig(ConfigModel):
    admission: bool = True
    """Quotes leave out, and creates refuse (409 ``insufficient_liquidity``), what the
    relayer's float on the destination cannot cover; a float not read within ``max_age``
    refuses them (503 ``liquidity_unknown``). Off: every route is offered (tests)."""
    overcommit_bps: int = Field(default=20_000, ge=10_000, le=1_000_000)
    """PENDING intents may ask, together, for this much of what is free (1/10,000; 20,000
    is twice): not every intent is paid. One intent alone never asks more than is free."""
    max_age: float = Field(default=60.0, gt=0, le=3600)
    """Seconds after which the float read by the destination's executor is too old to
    decide on: quotes and creates to that chain answer 503 until it is read again."""
    read_interval: float = Field(default=5.0, gt=0, le=600)
    """Seconds between the executor's reads of the relayer's and gas tank's balances
    (one JSON-RPC request) and its writes of the float to PostgreSQL."""
    view_refresh: float = Field(default=1.0, gt=0, le=60)
    """Seconds between the API's loads of the float from PostgreSQL (never from RPC)."""
    prefill_wait: float = Field(default=900.0, ge=0, le=7 * 86_400)
    """Seconds (since the prefill became due) a prefill may wait for the relayer to be
    refilled when it finds the relayer short, with an alert; then it fails and the payer
    is refunded. 0: it fails at once."""
    repayment_overdue_after: float = Field(default=3600.0, gt=0, le=30 * 86_400)
    """Seconds after which an unconfirmed repayment of the relayer counts as overdue
    (``intentd_relayer_repayments_overdue``, alert ``IntentdRepaymentsOverdue``)."""

    @model_validator(mode="after")
    def _fresh_enough(self) -> LiquidityConfig:
        if self.max_age < 2 * self.read_interval:
            raise ValueError(
                f"liquidity.max_age ({self.max_age} s) must be at least twice"
                f" liquidity.read_interval ({self.read_interval} s): every read would be"
                " about to go stale"
            )
        return self
