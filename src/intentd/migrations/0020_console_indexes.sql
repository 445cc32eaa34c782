-- intentd: no-transaction
-- intentd schema, version 17: the indexes of the console's reads (docs/console.md,
-- Performance), built concurrently: intents are read and written during the build.
--
-- Ended intents of a client by end time (the overview's day totals, summed once a day
-- per client): a partial index, so creating and moving live intents does not touch it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_console_ended ON intents (client_id, terminal_at)
    INCLUDE (source_chain, asset_token_symbol, asset_token_decimals, status, total_due,
             total_in_usd)
    WHERE terminal_at IS NOT NULL;
-- Live intents of a client by status and expiry (the overview's counts, the payments
-- needing attention).
CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_console_live ON intents (client_id, status, expires_at)
    INCLUDE (source_chain, updated_at, id)
    WHERE terminal_at IS NULL;
-- A payment's webhook deliveries (its detail page).
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_by_intent ON webhook_deliveries (intent_id)
    WHERE intent_id IS NOT NULL;
