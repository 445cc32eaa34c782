-- intentd schema, version 2: API keys, intents created in payment-modal sessions,
-- and how far trigger-processing has scanned each intent's window.

-- API keys: only the SHA-256 of the key is stored; the key is shown once at creation.
CREATE TABLE api_keys (
    id              UUID PRIMARY KEY,
    client_id       UUID NOT NULL,
    client_name     TEXT NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    prefix          TEXT NOT NULL,
    key_hash        TEXT NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    rate_limit      INTEGER CHECK (rate_limit > 0),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at      TIMESTAMPTZ
);
CREATE INDEX api_keys_by_client ON api_keys (client_id);

-- The session an intent was created in (payment modal), if any.
ALTER TABLE intents ADD COLUMN session_id TEXT;
CREATE INDEX intents_by_session ON intents (session_id) WHERE session_id IS NOT NULL;

-- Trigger-processing progress: the first block of the intent's window on its source
-- chain (found once by timestamp) and the last block scanned so far.
CREATE TABLE intent_scans (
    intent_id       BIGINT PRIMARY KEY REFERENCES intents (id),
    chain           TEXT NOT NULL,
    first_block     BIGINT NOT NULL CHECK (first_block >= 0),
    scanned_to      BIGINT NOT NULL CHECK (scanned_to >= first_block - 1),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
