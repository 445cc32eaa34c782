-- intentd: no-transaction
-- intentd schema, version 13: how long the pollers watch an intent's address (issue 11,
-- item 12; docs/indexer.md, "How long an address is watched").
--
-- intents.terminal_at: when the intent reached a terminal status (COMPLETED, EXPIRED,
-- REFUNDED, CANCELLED: the statuses without a move out in domain.status.ALLOWED_MOVES,
-- which a unit test keeps equal to the list below); NULL while it is live. Set once, by
-- the trigger below, whoever writes the status, to the writing transaction's now();
-- terminal statuses have no moves out, so it never changes again. The pollers watch an
-- address while its intent is live and for indexer.watch_retention_days after
-- terminal_at.
--
-- Applied outside a transaction, so that the table is never locked for long while the
-- API, the pollers and the running version use it: each statement commits on its own,
-- and each is safe to run again (the runner applies the file again after a failure).
-- The intents that were already terminal are stamped afterwards, in small batches, by
-- intentd.adapters.backfills (intentd migrate, intentd run); until then their
-- terminal_at is NULL and they are watched as live ones are.

-- A nullable column without a default: a catalog change, no rewrite. It takes the
-- table's ACCESS EXCLUSIVE lock for an instant, but must wait for it behind every open
-- transaction that uses the table, and every query on the table queues behind it: give
-- up after a few seconds (the migration fails and is run again) rather than stall them.
SET lock_timeout = '5s';
ALTER TABLE intents ADD COLUMN IF NOT EXISTS terminal_at TIMESTAMPTZ;

CREATE OR REPLACE FUNCTION intentd_intent_terminal_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IN ('COMPLETED', 'EXPIRED', 'REFUNDED', 'CANCELLED') THEN
        IF NEW.terminal_at IS NULL THEN
            NEW.terminal_at := now();
        END IF;
    ELSE
        NEW.terminal_at := NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER intents_terminal_at BEFORE INSERT OR UPDATE ON intents
    FOR EACH ROW EXECUTE FUNCTION intentd_intent_terminal_at();
RESET lock_timeout;

-- The watched set's reads (adapters/native_intents.py): the live intents in id order
-- (a poller's first load), and the ended ones by end time (the first load's recent ones,
-- and the sweep of those leaving the window), each a range scan of its own index.
-- Built concurrently: reads and writes of intents go on during the build (0.7 s for
-- 10^6 intents, bench/watch_migration.py; it grows with the table).
CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_live ON intents (id) WHERE terminal_at IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS intents_ended ON intents (terminal_at, id)
    WHERE terminal_at IS NOT NULL;
