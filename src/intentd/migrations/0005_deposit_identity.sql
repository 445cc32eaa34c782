-- intentd schema, version 5: a deposit's identity is the same on every fork, and a
-- reorg that removed a deposit the lifecycle could not undo holds back the intent's
-- spending actions until the deposit comes back (see docs/indexer.md, Reorgs).
--
-- Identity: (chain, tx_hash, token, transfer_index), where transfer_index is the
-- transfer's position among its transaction's Transfer logs of that token (-1 for the
-- native coin). log_index stays: the block-wide index where the transfer was last seen.
-- Rows recorded before this version keep transfer_index NULL (it cannot be computed
-- from what was stored); the lifecycle adopts such a row when the same transfer (same
-- transaction, token, recipient and amount) is seen again (lifecycle_store.find_deposit).
ALTER TABLE deposits
    ADD COLUMN transfer_index INTEGER CHECK (transfer_index >= -1),
    -- set while a retraction of this deposit could not be undone; cleared when it is
    -- seen again on the canonical chain
    ADD COLUMN orphaned_at    TIMESTAMPTZ,
    -- when the operator alert for a too long hold was raised (once per hold)
    ADD COLUMN hold_alerted_at TIMESTAMPTZ;
UPDATE deposits SET transfer_index = -1 WHERE log_index = -1;
ALTER TABLE deposits DROP CONSTRAINT deposits_chain_tx_hash_log_index_key;
CREATE UNIQUE INDEX deposits_identity ON deposits (chain, tx_hash, token, transfer_index);
CREATE INDEX deposits_by_tx ON deposits (chain, tx_hash);
CREATE INDEX deposits_orphaned ON deposits (orphaned_at) WHERE orphaned_at IS NOT NULL;

-- Action status 'held': ready, but not to be executed while a deposit of its intent on
-- its chain is orphaned (only actions signed by the intent address are held).
-- Released to 'ready' when the deposit is back (the trigger of 0004 wakes the executor).

-- published_deposits is unchanged: the identity of an orphan is read from its stored
-- payload (token, transfer_index; absent in payloads published before this version).
