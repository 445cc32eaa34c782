-- intentd schema, version 8: deposits recorded by trigger-processing, watched until
-- their block is final. The poller retracts only what it published
-- (published_deposits); these come from the API, possibly with no poller running, so
-- the lifecycle's verifier checks that their block is still canonical and retracts or
-- moves them when a reorg orphans it (docs/api.md, "Reorgs").
CREATE TABLE trigger_deposits (
    deposit_id      BIGINT PRIMARY KEY REFERENCES deposits (id),
    chain           TEXT NOT NULL,
    settled_at      TIMESTAMPTZ,
    outcome         TEXT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- The verifier reads the open ones of a chain.
CREATE INDEX trigger_deposits_open ON trigger_deposits (chain, deposit_id)
    WHERE settled_at IS NULL;

-- The hash of the last block trigger-processing scanned for an intent: if the chain no
-- longer has it, a reorg replaced blocks already scanned, and they are scanned again.
ALTER TABLE intent_scans ADD COLUMN scanned_hash TEXT;
