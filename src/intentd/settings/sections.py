"""Every config section besides chains: database, Kafka, intents, observability, fees,
API and execution.

Each refuses unknown keys and values out of its bounds; a database URL must be
``postgresql://`` and is a secret (never shown); bridge options have unique names and
well-formed route patterns.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal

from pydantic import Field, IPvAnyNetwork, SecretStr, field_validator, model_validator

from intentd.settings.base import ConfigModel


class DatabaseConfig(ConfigModel):
    url: SecretStr
    min_pool: int = Field(default=1, ge=0)
    max_pool: int = Field(default=10, ge=1)

    @field_validator("url")
    @classmethod
    def _dsn(cls, url: SecretStr) -> SecretStr:
        if not url.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return url


class KafkaConfig(ConfigModel):
    bootstrap_servers: str = Field(min_length=1)
    client_id: str = "intentd"
    topic_prefix: str = Field(default="intentd", pattern=r"^[A-Za-z0-9._-]+$")
    lifecycle_group: str = "intentd-lifecycle"
    idempotent_producer: bool = True
    """The producer's idempotence (no duplicate or reordered writes on retry); turn it off
    only for a broker without InitProducerId v0 (Tansu), see docs/operations.md."""
    session_timeout_ms: int = Field(default=10_000, ge=1_000, le=300_000)
    """A consumer silent this long leaves its group; its partitions go to the others."""
    heartbeat_interval_ms: int = Field(default=3_000, ge=100, le=60_000)
    """How often a group member tells the coordinator it lives; below a third of the
    session timeout."""

    @model_validator(mode="after")
    def _heartbeat_within_session(self) -> KafkaConfig:
        if self.heartbeat_interval_ms * 3 > self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be at most a third of session_timeout_ms")
        return self


class IntentsConfig(ConfigModel):
    default_expires_in: int = Field(default=3600, ge=1)
    """Seconds from creation to ``expires_at`` when the request names none."""
    min_expires_in: int = Field(default=60, ge=1)
    """Shortest lifetime a request may ask for (tests and demos may lower it)."""
    max_expires_in: int = Field(default=7 * 86400, ge=60)
    default_client_id: str = "00000000-0000-0000-0000-000000000000"
    """Client that owns intents created from the CLI."""
    max_open_per_client: int = Field(default=10_000, ge=1, le=10_000_000)
    """PENDING intents (awaiting payment) one client may have at once, whoever creates
    them (its API keys, its sessions' payers, the CLI); one more create is refused with
    409 ``open_intent_limit`` (docs/api.md)."""
    event_retention_days: int = Field(default=90, ge=1, le=3650)
    """Days the event log (``GET /api/v1/events``) keeps an event; older ones are pruned."""
    expiry_grace_seconds: int = Field(default=120, ge=0, le=86400)
    """Seconds past ``expires_at`` before a PENDING intent is expired, so that a payment
    mined before ``expires_at`` is read (``confirmations`` times the block time later) and applied
    first; at least the slowest source chain's confirmation time plus the poll interval."""
    expiry_grace_max_seconds: int = Field(default=86400, ge=1, le=30 * 86400)
    """Seconds past ``expires_at`` after which a PENDING intent is expired even though the
    lifecycle has not applied the deposits logs up to its expiry (error log and metric)."""

    @model_validator(mode="after")
    def _grace_below_max(self) -> IntentsConfig:
        if self.expiry_grace_max_seconds <= self.expiry_grace_seconds:
            raise ValueError(
                "intents.expiry_grace_max_seconds must exceed intents.expiry_grace_seconds"
            )
        return self


class IndexerConfig(ConfigModel):
    """The ``[indexer]`` section: what every chain's poller shares (docs/indexer.md)."""

    watch_retention_days: int = Field(default=30, ge=1, le=3650)
    """Days an intent's address stays watched after the intent became terminal; a
    payment within them is refunded as a late deposit, a later one only by an operator
    (``intentd intents rescan``). Memory: about 110 bytes per watched address."""


class ObservabilityConfig(ConfigModel):
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    """Port of the Prometheus / health endpoint; None disables it."""


class ProcessConfig(ConfigModel):
    drain_seconds: float = Field(default=20.0, gt=0, le=600)
    """After SIGTERM, how long the roles of a process may take to finish what they hold
    before they are cancelled; the process exits within this plus ``runtime.STOP_MARGIN``
    (10 s), which the supervisor's stop timeout must exceed (40 s in ``deploy/``)."""


class BridgeOption(ConfigModel):
    """One way to move value between chains, with its fee (see docs/api.md, Fees)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")
    fixed_usd: Decimal = Field(default=Decimal(0), ge=0, le=1_000_000)
    """Flat fee per intent, in USD, charged in ``tokenIn`` at its USD price."""
    bps: Decimal = Field(default=Decimal(0), ge=0, le=10_000)
    """Proportional fee in basis points (1/10,000) of the amount."""
    routes: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    """Routes it serves: ``"*"`` or ``"SOURCE->DESTINATION"`` (either side may be ``*``)."""
    estimated_seconds: int = Field(default=30, ge=1, le=86_400)

    @field_validator("routes")
    @classmethod
    def _route_patterns(cls, routes: list[str]) -> list[str]:
        for route in routes:
            if route != "*" and not re.fullmatch(
                r"(\*|[A-Z][A-Z0-9_]*)->(\*|[A-Z][A-Z0-9_]*)", route
            ):
                raise ValueError(
                    f"route {route!r} must be '*' or 'SOURCE->DESTINATION' ('*' allowed)"
                )
        return routes

    def serves(self, source: str, destination: str) -> bool:
        for route in self.routes:
            if route == "*":
                return True
            src, _, dst = route.partition("->")
            if src in ("*", source) and dst in ("*", destination):
                return True
        return False


class FeesConfig(ConfigModel):
    """The fee model: a route fee per bridge option plus the application fee."""

    app_fee_bps: Decimal = Field(default=Decimal(0), ge=0, le=10_000)
    app_fee_fixed_usd: Decimal = Field(default=Decimal(0), ge=0, le=1_000_000)
    bridges: list[BridgeOption] = Field(
        default_factory=lambda: [BridgeOption(name="relay")], min_length=1
    )

    @model_validator(mode="after")
    def _unique_names(self) -> FeesConfig:
        names = [b.name for b in self.bridges]
        if len(names) != len(set(names)):
            raise ValueError("two bridge options share a name")
        return self


class ApiConfig(ConfigModel):
    """The HTTP API role (``intentd api``)."""

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    replicas: int = Field(default=1, ge=1, le=1000)
    """API replicas (hosts or pods) behind the load balancer."""
    default_rate_limit: int = Field(default=250, ge=1, le=1_000_000)
    """Requests per second per API key, unless the key has its own limit."""
    key_cache_ttl: float = Field(default=5.0, ge=0, le=300)
    """Seconds a verified (or unknown) key is trusted without a database read."""
    session_ttl: int = Field(default=900, ge=60, le=86_400)
    """Default lifetime of a session token, seconds."""
    max_session_ttl: int = Field(default=3600, ge=60, le=86_400)
    trigger_max_blocks: int = Field(default=5000, ge=1, le=1_000_000)
    """Blocks one trigger-processing call reads in full at most (native-coin intents);
    the next call continues."""
    trigger_max_log_blocks: int = Field(default=500_000, ge=1, le=100_000_000)
    """Blocks one trigger-processing call scans at most with recipient-filtered
    ``eth_getLogs`` (token intents); the next call continues."""
    trigger_cooldown: float = Field(default=10.0, ge=0, le=3600)
    """Seconds after a trigger-processing call starts during which another call for the
    same intent is answered 429 (over every API process, through PostgreSQL)."""
    trigger_max_per_client: int = Field(default=4, ge=1, le=10_000)
    """Trigger-processing calls one client, or one payment-modal session (its own slots),
    may have running at once over every API process; one more is answered 429."""
    trigger_timeout: float = Field(default=30.0, gt=0, le=600)
    """Seconds one trigger-processing call may take (RPC reads, waits for the RPC
    client's connections, the database) before it stops with a 503; what it credited
    and scanned until then is kept."""
    trigger_clock_skew: int = Field(default=300, ge=0, le=86_400)
    """Seconds before ``created_at`` where the scan of an intent's window starts."""
    cors_origins: list[str] = Field(default_factory=list)
    """Origins allowed to call the session endpoints from a browser (the payment modal)."""
    workers: int = Field(default=1, ge=1, le=64)
    """Processes serving the API in each replica (``intentd api`` only; ``run`` uses one)."""
    session_rate_limit: int = Field(default=10, ge=1, le=1_000_000)
    """Requests per second per session token (its own bucket, not its key's)."""
    max_intents_per_session: int = Field(default=5, ge=1, le=10_000)
    """Intents one session token may create; the next create is a 409."""
    source_rate_limit: int = Field(default=20, ge=1, le=1_000_000)
    """Requests per second per source address that carry no known key (unknown,
    malformed, missing or not yet cached): what an unauthenticated flood gets."""
    trusted_proxies: list[IPvAnyNetwork] = Field(default_factory=list)
    """Addresses (or networks) of the proxies in front of the API: only from them is
    ``X-Forwarded-For`` believed when telling the source address."""
    key_cache_size: int = Field(default=100_000, ge=1, le=10_000_000)
    """Verified keys cached per process (least recently used go first)."""
    key_miss_cache_size: int = Field(default=10_000, ge=1, le=10_000_000)
    """Unknown keys remembered per process, apart from the verified ones."""
    db_acquire_timeout: float = Field(default=2.0, gt=0, le=60)
    """Seconds a request waits for a database connection before a 503."""
    db_timeout: float = Field(default=10.0, gt=0, le=60)
    """Seconds a request's work on one database connection may take (a stalled or
    unreachable server) before a 503 ``database_unavailable``."""
    max_connections: int = Field(default=4096, ge=1, le=1_000_000)
    """Open connections per process; one more is answered 503 and closed."""
    max_requests_in_flight: int = Field(default=1024, ge=1, le=1_000_000)
    """Requests handled at once per process; one more is answered 503."""
    header_timeout: float = Field(default=10.0, gt=0, le=300)
    """Seconds a request's line and headers may take to arrive (slow clients are cut)."""
    keep_alive_timeout: int = Field(default=5, ge=1, le=300)
    """Seconds an idle keep-alive connection stays open."""
    max_waiting_creates: int = Field(default=1024, ge=1, le=1_000_000)
    """Creates waiting for the intent writer per process; one more is answered 503."""

    @property
    def rate_limit_shares(self) -> int:
        """Processes that each enforce ``rate limit / shares`` of every key: one token
        bucket per key per process, and ``replicas * workers`` processes."""
        return self.replicas * self.workers


class ExecutionConfig(ConfigModel):
    """The executors (``intentd execute --chain NAME``); see docs/execution.md."""

    poll_interval: float = Field(default=0.5, gt=0, le=60)
    """Seconds between looks for work when no NOTIFY arrives."""
    stuck_after: float = Field(default=30.0, gt=0, le=86_400)
    """Seconds without a receipt before a transaction is re-broadcast or replaced."""
    proof_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds a proof read (the receipts' view, the search for a nonce's use) may take
    before the judgement is "unknown, wait" (a hung provider never stalls a tick)."""
    max_attempts: int = Field(default=3, ge=1, le=100)
    """Failed attempts (reverts, nonces taken by others) before an action fails."""
    retry_backoff: float = Field(default=5.0, ge=0, le=3600)
    """Seconds before the second attempt; doubled for each further one."""
    topup_headroom_bps: int = Field(default=10_000, ge=0, le=100_000)
    """Gas top-ups carry this much more (1/10,000) than one transfer at today's fees."""
    l1_fee_margin_bps: int = Field(default=2_500, ge=0, le=100_000)
    """A native sweep on an ``op_stack`` chain reserves the oracle's L1 data fee bound
    plus this much more (1/10,000): the L1 fee moves between estimate and inclusion."""
    unconfirmed_alert_after: float = Field(default=900.0, ge=0, le=86_400)
    """Seconds a prefill may wait for the second provider to confirm its deposits
    before an operator alert (it keeps waiting after it)."""


class WebhooksConfig(ConfigModel):
    """The ``[webhooks]`` section: the ``intentd webhooks`` role (docs/webhooks.md)."""

    group: str = Field(default="intentd-webhooks", min_length=1)
    """Kafka consumer group of ``intentd webhooks`` (replicas share the partitions)."""
    allow_private_targets: bool = False
    """Development and tests only: let endpoints be loopback or private addresses."""
    max_in_flight: int = Field(default=256, ge=1, le=10_000)
    """Attempts in flight per process."""
    per_endpoint_concurrency: int = Field(default=4, ge=1, le=100)
    """Attempts in flight per endpoint, over every process."""
    per_client_in_flight: int = Field(default=32, ge=1, le=10_000)
    """Attempts of one client in flight per process (its fair share; at most
    ``max_in_flight``): a client whose endpoints all hang holds no more slots."""
    max_endpoints_per_client: int = Field(default=16, ge=1, le=10_000)
    """Endpoints a client may register in each mode (then 409 ``too_many_webhooks``)."""
    send_calls_per_minute: int = Field(default=60, ge=1, le=100_000)
    """Test, redeliver and recover calls per client and minute, over every API replica
    (then 429 ``webhook_sends_rate_limited``)."""
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

    @model_validator(mode="after")
    def _share_within_the_process(self) -> WebhooksConfig:
        if self.per_client_in_flight > self.max_in_flight:
            raise ValueError(
                f"per_client_in_flight ({self.per_client_in_flight}) must be at most"
                f" max_in_flight ({self.max_in_flight}): one client's share of a process"
            )
        return self
