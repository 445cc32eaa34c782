-- intentd schema, version 15: each client's budget of webhook send calls (test,
-- redeliver, recover), a token bucket shared by every API replica (docs/webhooks.md,
-- Limits). One row per client that ever made such a call; tokens refill at
-- webhooks.send_calls_per_minute per minute up to one minute's worth.
CREATE TABLE webhook_send_budgets (
    client_id       UUID PRIMARY KEY,
    tokens          DOUBLE PRECISION NOT NULL CHECK (tokens >= 0),
    updated_at      TIMESTAMPTZ NOT NULL
);
