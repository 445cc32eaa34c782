-- intentd schema, version 11: the event log (docs/events.md).
-- Every public event, written by the lifecycle in the same transaction as its outbox
-- row, so the log and Kafka carry the same events. Kept `intents.event_retention_days`
-- (90 by default), pruned by the lifecycle's expiry loop. Nothing is backfilled from
-- the outbox: its envelopes have no `mode` (decided by the chain's network class, which
-- is configuration), so the log starts with the events written after this migration
-- (docs/events.md, "Retention").

CREATE TABLE intent_events (
    id              UUID PRIMARY KEY,             -- the envelope's id (UUIDv5 of intent, sequence)
    intent_id       BIGINT NOT NULL REFERENCES intents (id),
    client_id       UUID NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    type            TEXT NOT NULL,
    sequence        BIGINT NOT NULL CHECK (sequence >= 1),
    created_at      TIMESTAMPTZ NOT NULL,
    -- The list's order: the writing transaction's id, then the insert order. A reader
    -- sees only rows of transactions older than every transaction still running
    -- (pg_snapshot_xmin), so a row that commits later always sorts after every row
    -- already read: a cursor never skips an event that commits late.
    tx_id           BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    position        BIGINT GENERATED ALWAYS AS IDENTITY,
    body            JSONB NOT NULL,
    UNIQUE (intent_id, sequence)                  -- also the timeline's index
);
-- GET /events: a client's events in log order, with or without a type filter.
CREATE INDEX intent_events_by_client ON intent_events (client_id, tx_id, position);
CREATE INDEX intent_events_by_client_type ON intent_events (client_id, type, tx_id, position);
-- Retention: the oldest first.
CREATE INDEX intent_events_by_time ON intent_events (created_at);
