"""The ``[webhooks]`` settings section (docs/webhooks.md, Operations)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["WebhooksConfig"]


class WebhooksConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str = Field(default="intentd-webhooks", min_length=1)
    """Kafka consumer group of ``intentd webhooks`` (replicas share the partitions)."""
    allow_private_targets: bool = False
    """Development and tests only: let endpoints be loopback or private addresses."""
    max_in_flight: int = Field(default=256, ge=1, le=10_000)
    """Attempts in flight per process."""
    per_endpoint_concurrency: int = Field(default=4, ge=1, le=100)
    """Attempts in flight per endpoint, over every process."""
    connect_timeout: float = Field(default=5.0, gt=0, le=60)
    total_timeout: float = Field(default=15.0, gt=0, le=120)
    """Seconds an attempt may take, from connecting to the end of the (capped) answer."""
    poll_interval: float = Field(default=1.0, gt=0, le=60)
    """Seconds between looks for due retries when no NOTIFY arrives."""
    fetch_max_wait_ms: int = Field(default=10, ge=1, le=500)
    """How long a Kafka fetch may wait for events: an upper bound on the intake's
    latency where the broker holds fetches (an idle consumer fetches this often)."""
    retention_days: int = Field(default=30, ge=1, le=3650)
    """Days a delivered or failed delivery (with its attempts and event) is kept."""
    rotation_overlap: int = Field(default=86_400, ge=0, le=7 * 86_400)
    """Seconds a rotated-out secret still signs (both signatures are sent)."""
