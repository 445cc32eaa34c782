-- intentd schema, version 1: intents, deposits, owed actions, outbox, chain cursors.
-- Conventions: addresses and hashes are lowercase 0x-hex text; token amounts are
-- integers in base units (NUMERIC(78,0)); USD figures are exact decimals.

-- HD derivation index of intent addresses: drawn once, never reused.
CREATE SEQUENCE intent_address_index_seq START WITH 1 NO CYCLE;

CREATE TABLE intents (
    id                      BIGSERIAL PRIMARY KEY,
    client_id               UUID NOT NULL,
    idempotency_key         TEXT,
    request_hash            TEXT NOT NULL,
    sender                  TEXT,
    initial_amount          TEXT NOT NULL,
    amount_symbol           TEXT,
    source_chain            TEXT NOT NULL,
    destination_chain       TEXT NOT NULL,
    token_in                TEXT NOT NULL,
    token_out               TEXT NOT NULL,
    token_out_decimals      INTEGER NOT NULL CHECK (token_out_decimals BETWEEN 0 AND 36),
    asset_token_symbol      TEXT NOT NULL,
    asset_token_decimals    INTEGER NOT NULL CHECK (asset_token_decimals BETWEEN 0 AND 36),
    total_due               NUMERIC(78, 0) NOT NULL CHECK (total_due > 0),
    fees_in_asset           NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (fees_in_asset >= 0),
    app_fee_in_asset        NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (app_fee_in_asset >= 0),
    amount_out              NUMERIC(78, 0) NOT NULL CHECK (amount_out >= 0),
    fees_in_usd             NUMERIC NOT NULL DEFAULT 0,
    app_fee_in_usd          NUMERIC NOT NULL DEFAULT 0,
    total_in_usd            NUMERIC,
    slippage                NUMERIC NOT NULL DEFAULT 0,
    address_index           BIGINT NOT NULL UNIQUE,
    intent_address          TEXT NOT NULL UNIQUE CHECK (intent_address ~ '^0x[0-9a-f]{40}$'),
    recipient               TEXT NOT NULL,
    refund_address          TEXT NOT NULL,
    relayer                 TEXT NOT NULL DEFAULT '',
    coordinator             TEXT NOT NULL DEFAULT '',
    bridger                 TEXT NOT NULL DEFAULT '',
    bridge_extra_data       TEXT NOT NULL DEFAULT '0x',
    status                  TEXT NOT NULL,
    funding_status          TEXT NOT NULL DEFAULT 'NONE',
    received                NUMERIC(78, 0) NOT NULL DEFAULT 0 CHECK (received >= 0),
    tx_hash                 TEXT,
    needs_relay             BOOLEAN NOT NULL DEFAULT FALSE,
    event_sequence          BIGINT NOT NULL DEFAULT 0,
    version                 BIGINT NOT NULL DEFAULT 0,
    metadata                JSONB NOT NULL DEFAULT '{}'::jsonb,
    expires_at              TIMESTAMPTZ NOT NULL,
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (client_id, idempotency_key)
);
-- Expiry looks only at PENDING intents, in expiry order.
CREATE INDEX intents_pending_by_expiry ON intents (expires_at) WHERE status = 'PENDING';

-- Every transfer seen to an intent address, once per (chain, tx_hash, log_index);
-- native transfers have log_index -1.
CREATE TABLE deposits (
    id              BIGSERIAL PRIMARY KEY,
    chain           TEXT NOT NULL,
    tx_hash         TEXT NOT NULL,
    log_index       INTEGER NOT NULL CHECK (log_index >= -1),
    block_number    BIGINT NOT NULL,
    block_hash      TEXT NOT NULL,
    block_time      TIMESTAMPTZ NOT NULL,
    token           TEXT NOT NULL,
    from_address    TEXT NOT NULL,
    to_address      TEXT NOT NULL,
    amount          NUMERIC(78, 0) NOT NULL CHECK (amount > 0),
    intent_id       BIGINT REFERENCES intents (id),
    disposition     TEXT NOT NULL,
    reason          TEXT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (chain, tx_hash, log_index)
);
CREATE INDEX deposits_by_intent ON deposits (intent_id);

-- Money the service must move; unique per (intent, kind, sequence) so a decision
-- applied twice records one action.
CREATE TABLE actions (
    id              BIGSERIAL PRIMARY KEY,
    intent_id       BIGINT NOT NULL REFERENCES intents (id),
    kind            TEXT NOT NULL,
    sequence        INTEGER NOT NULL,
    chain           TEXT NOT NULL,
    token           TEXT NOT NULL,
    amount          NUMERIC(78, 0) NOT NULL CHECK (amount > 0),
    to_address      TEXT NOT NULL,
    reason          TEXT,
    deposit_id      BIGINT REFERENCES deposits (id),
    status          TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (intent_id, kind, sequence)
);
CREATE INDEX actions_open ON actions (status, id);

-- Transactional outbox: written with the state change, relayed to Kafka afterwards.
CREATE TABLE outbox (
    id              BIGSERIAL PRIMARY KEY,
    topic           TEXT NOT NULL,
    key             TEXT NOT NULL,
    payload         BYTEA NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    published_at    TIMESTAMPTZ
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- Poller state: the last processed block of each chain ...
CREATE TABLE chain_cursors (
    chain           TEXT PRIMARY KEY,
    block_number    BIGINT NOT NULL,
    block_hash      TEXT NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- ... the recent canonical blocks it processed, to find the common ancestor on a reorg ...
CREATE TABLE chain_blocks (
    chain           TEXT NOT NULL,
    block_number    BIGINT NOT NULL,
    block_hash      TEXT NOT NULL,
    parent_hash     TEXT NOT NULL,
    PRIMARY KEY (chain, block_number)
);
-- ... and the deposits it published from them, to retract those a deep reorg removes.
CREATE TABLE published_deposits (
    chain           TEXT NOT NULL,
    block_number    BIGINT NOT NULL,
    block_hash      TEXT NOT NULL,
    tx_hash         TEXT NOT NULL,
    log_index       INTEGER NOT NULL,
    intent_address  TEXT NOT NULL,
    payload         BYTEA NOT NULL,
    PRIMARY KEY (chain, block_number, tx_hash, log_index)
);
