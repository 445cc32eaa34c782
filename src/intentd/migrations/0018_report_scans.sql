-- intentd: no-transaction
-- intentd schema, version 17: the date-range scans of the reports (issue 21; docs/api.md,
-- Reports). Each export walks one index in time order, a page after the last row read,
-- so its first row comes without a sort and a million rows stream in bounded memory:
--   deposits   by block time;
--   payments, refunds, fees: confirmed actions by when they were confirmed (updated_at
--              of a confirmed action never changes again: confirmed is terminal);
--   gas        final transactions (confirmed or reverted: both burned gas) likewise;
--   reconciliation: a client's ended intents by terminal_at (0013).
-- Built concurrently (reads and writes of these tables go on during the build); each
-- statement is safe to run again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deposits_by_block_time ON deposits (block_time, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS actions_confirmed_at ON actions (updated_at, id)
    WHERE status = 'confirmed';
CREATE INDEX CONCURRENTLY IF NOT EXISTS chain_transactions_final_at
    ON chain_transactions (updated_at, id) WHERE status IN ('confirmed', 'reverted');
CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_ended_by_client
    ON intents (client_id, terminal_at, id) WHERE terminal_at IS NOT NULL;
