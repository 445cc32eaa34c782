"""The ``[console]`` section: the merchant console served under ``/console``
(docs/console.md). Bounds are checked when the config is read."""

from __future__ import annotations

import re
from decimal import Decimal

from pydantic import Field, field_validator

from intentd.settings.base import ConfigModel

__all__ = ["ConsoleConfig"]


class ConsoleConfig(ConfigModel):
    enabled: bool = True
    """Serve the console (pages under ``/console``) from the API processes."""
    public_url: str = ""
    """Where browsers reach the API (``https://pay.example.com``): the base of the sign-in
    links ``intentd users create|link`` prints. Empty: ``http://api.host:api.port``."""
    secure_cookies: bool = True
    """Mark the console's cookies ``Secure`` (HTTPS only); false only for development on
    plain http."""
    session_idle_minutes: int = Field(default=30, ge=1, le=1440)
    """A session unused this long ends."""
    session_absolute_hours: int = Field(default=12, ge=1, le=720)
    """A session ends this long after sign-in, however much it is used."""
    signin_link_hours: int = Field(default=72, ge=1, le=720)
    """A one-time sign-in link is valid this long."""
    refund_approval_above_usd: Decimal | None = Field(default=None, ge=0)
    """Default threshold of a client without its own: refunds above it (in USD) wait for
    a second user's approval. None: no approval unless the client sets a threshold."""
    approval_ttl_hours: int = Field(default=48, ge=1, le=720)
    """A refund waiting for approval expires (nothing refunded) after this long."""
    audit_retention_days: int = Field(default=400, ge=30, le=3650)
    """Days the audit log keeps a record; older ones are pruned."""
    signin_failures_per_account: int = Field(default=5, ge=1, le=1000)
    """Failed sign-ins to one account (from browsers it never signed in from) before
    such sign-ins are held back for a while (docs/console.md, Signing in)."""
    signin_failures_per_source: int = Field(default=30, ge=1, le=100_000)
    """Failed sign-ins from one address in 15 minutes before it is held back."""

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if url and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
            raise ValueError("must be an http(s) URL without query or fragment")
        return url.rstrip("/")
