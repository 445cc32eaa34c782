-- intentd: no-transaction
-- intentd schema, version 23: the relayer's reverted transfers by block (the float's
-- "newest paid" block, adapters/relayer_float.py). A transfer that reverted (mined,
-- status 0) paid no amount but spent gas at its block: a balance read from a node
-- below that block still shows the gas, and is not believed. Reverted transfers are
-- few: a small partial index beside 0017's (confirmed ones). Built concurrently;
-- safe to run again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS chain_transactions_reverted_by_signer
    ON chain_transactions (chain, signer, block_number)
    WHERE status = 'reverted' AND purpose = 'transfer';
