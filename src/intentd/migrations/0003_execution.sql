-- intentd schema, version 3: execution. Actions become executable work items of the
-- executor of their chain; every transaction is recorded before it is sent; nonces
-- of each signer live here so they survive restarts.

-- Action statuses:
--   ready      written by the lifecycle; waiting for the executor of `chain`
--   submitted  a transaction for it is recorded (and maybe sent); see chain_transactions
--   confirmed  its transaction is mined with status 1 at the chain's confirmation depth
--   failed     the retry policy gave up (the lifecycle decides what follows)
--   cancelled  withdrawn before any transaction was recorded (a reorg retracted its deposit)
-- The spine recorded refunds as 'owed'; they are executable now.
UPDATE actions SET status = 'ready' WHERE status = 'owed';

ALTER TABLE actions
    -- who signs: 'relayer', 'gas_tank', or 'intent' (the intent address, HD index below)
    ADD COLUMN signer_kind   TEXT NOT NULL DEFAULT 'intent'
        CHECK (signer_kind IN ('relayer', 'gas_tank', 'intent')),
    ADD COLUMN signer_index  BIGINT,
    -- a native-coin transfer from an intent address pays its own gas: the recipient
    -- gets `amount` minus the gas the transaction may cost (see docs/execution.md)
    ADD COLUMN gas_from_amount BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN attempts      INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN not_before    TIMESTAMPTZ NOT NULL DEFAULT now(),
    ADD COLUMN last_error    TEXT,
    ADD COLUMN tx_hash       TEXT,
    ADD COLUMN amount_sent   NUMERIC(78, 0),
    ADD COLUMN gas_cost      NUMERIC(78, 0);

UPDATE actions a SET signer_index = i.address_index
  FROM intents i WHERE a.intent_id = i.id AND a.signer_kind = 'intent';

-- The executor of a chain takes its ready actions in order.
CREATE INDEX actions_ready ON actions (chain, not_before, id) WHERE status = 'ready';

-- Every transaction a signer of ours signed, recorded before it is broadcast.
-- Statuses: signed -> sent -> mined -> confirmed | reverted; replaced (a same-nonce
-- successor was recorded); dropped (its nonce was consumed by another transaction).
CREATE TABLE chain_transactions (
    id                      BIGSERIAL PRIMARY KEY,
    action_id               BIGINT NOT NULL REFERENCES actions (id),
    purpose                 TEXT NOT NULL CHECK (purpose IN ('transfer', 'gas_topup')),
    chain                   TEXT NOT NULL,
    signer                  TEXT NOT NULL,
    nonce                   BIGINT NOT NULL CHECK (nonce >= 0),
    tx_hash                 TEXT NOT NULL UNIQUE,
    raw_tx                  BYTEA NOT NULL,
    to_address              TEXT NOT NULL,
    value                   NUMERIC(78, 0) NOT NULL,
    gas_limit               BIGINT NOT NULL,
    max_fee_per_gas         NUMERIC(78, 0) NOT NULL,
    max_priority_fee_per_gas NUMERIC(78, 0) NOT NULL,
    status                  TEXT NOT NULL,
    block_number            BIGINT,
    block_hash              TEXT,
    gas_used                BIGINT,
    effective_gas_price     NUMERIC(78, 0),
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at                 TIMESTAMPTZ,
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX chain_transactions_open ON chain_transactions (chain, status)
    WHERE status IN ('signed', 'sent', 'mined');
CREATE INDEX chain_transactions_by_action ON chain_transactions (action_id);

-- Next nonce of each signer on each chain; allocated under this row's lock, in the
-- transaction that records the signed transaction.
CREATE TABLE signer_nonces (
    chain       TEXT NOT NULL,
    signer      TEXT NOT NULL,
    next_nonce  BIGINT NOT NULL CHECK (next_nonce >= 0),
    PRIMARY KEY (chain, signer)
);

-- Action results the lifecycle has applied (idempotence of the results consumer).
CREATE TABLE applied_results (
    id          TEXT PRIMARY KEY,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
