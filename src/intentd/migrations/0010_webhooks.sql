-- intentd schema, version 10: webhook endpoints, the events they are sent, one delivery
-- per (event, endpoint), and every attempt (docs/webhooks.md).

-- An endpoint belongs to a client and a mode (the registering API key's). Its secrets
-- are sealed with AES-256-GCM under INTENTD_WEBHOOK_KEY (never stored in clear); the
-- previous secret stays valid until previous_secret_expires_at after a rotation.
CREATE TABLE webhook_endpoints (
    id                          UUID PRIMARY KEY,
    client_id                   UUID NOT NULL,
    mode                        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    url                         TEXT NOT NULL CHECK (length(url) <= 2048),
    description                 TEXT NOT NULL DEFAULT '',
    event_types                 TEXT[],                 -- NULL: every type
    enabled                     BOOLEAN NOT NULL DEFAULT true,
    disabled_reason             TEXT CHECK (disabled_reason IN ('gone', 'failing', 'client')),
    disabled_at                 TIMESTAMPTZ,
    secret_sealed               BYTEA NOT NULL,
    previous_secret_sealed      BYTEA,
    previous_secret_expires_at  TIMESTAMPTZ,
    failing_since               TIMESTAMPTZ,            -- first failure since the last success
    created_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (enabled = (disabled_reason IS NULL))
);
CREATE INDEX webhook_endpoints_by_client ON webhook_endpoints (client_id, mode, created_at, id);

-- The exact body every attempt of an event sends (recorded once, whatever the number
-- of endpoints). intent_id is NULL for test events.
CREATE TABLE webhook_events (
    id              TEXT PRIMARY KEY,
    type            TEXT NOT NULL,
    client_id       UUID NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    intent_id       BIGINT,
    sequence        INTEGER NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    body            BYTEA NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One delivery per event and endpoint. pending: waits for next_attempt_at (leased
-- while lease_until is in the future); delivered; failed (retries used up, or the
-- endpoint was disabled): recover or redeliver makes it pending again.
-- attempts counts every attempt; round_attempts those since it was last scheduled.
CREATE TABLE webhook_deliveries (
    id                  BIGSERIAL PRIMARY KEY,
    event_id            TEXT NOT NULL REFERENCES webhook_events (id),
    endpoint_id         UUID NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    intent_id           BIGINT,
    sequence            INTEGER NOT NULL,
    event_created_at    TIMESTAMPTZ NOT NULL,
    status              TEXT NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    round_attempts      INTEGER NOT NULL DEFAULT 0 CHECK (round_attempts >= 0),
    next_attempt_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    lease_until         TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due
    ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_unsent
    ON webhook_deliveries (endpoint_id, intent_id, sequence)
    WHERE status = 'pending' AND attempts = 0;
CREATE INDEX webhook_deliveries_pending_age
    ON webhook_deliveries (created_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_failed
    ON webhook_deliveries (endpoint_id, event_created_at) WHERE status = 'failed';
CREATE INDEX webhook_deliveries_leased                               -- in flight
    ON webhook_deliveries (endpoint_id, lease_until) WHERE lease_until IS NOT NULL;
CREATE INDEX webhook_deliveries_ended
    ON webhook_deliveries (updated_at) WHERE status <> 'pending';     -- pruning

-- Every attempt: when, the answer's status (NULL: no answer), latency, the error, the
-- first 4 KiB of the answer, and when the next attempt is due (NULL: none).
CREATE TABLE webhook_attempts (
    id                  BIGSERIAL PRIMARY KEY,
    delivery_id         BIGINT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    endpoint_id         UUID NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    attempted_at        TIMESTAMPTZ NOT NULL,
    status_code         INTEGER,
    latency_ms          INTEGER NOT NULL CHECK (latency_ms >= 0),
    error               TEXT,
    response_head       TEXT NOT NULL DEFAULT '' CHECK (octet_length(response_head) <= 16384),
    outcome             TEXT NOT NULL
                        CHECK (outcome IN ('delivered', 'retry', 'failed', 'disabled')),
    next_attempt_at     TIMESTAMPTZ
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, id);
CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);
