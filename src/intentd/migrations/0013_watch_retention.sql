-- intentd schema, version 13: how long the pollers watch an intent's address (issue 11,
-- item 12; docs/indexer.md, "How long an address is watched").
--
-- intents.terminal_at: when the intent reached a terminal status (COMPLETED, EXPIRED,
-- REFUNDED, CANCELLED: the statuses without a move out in domain.status.ALLOWED_MOVES,
-- which a unit test keeps equal to the lists below); NULL while it is live. Set once, by the trigger below, whoever writes the
-- status, to the writing transaction's now(); terminal statuses have no moves out, so
-- it never changes again. The pollers watch an address while its intent is live and for
-- indexer.watch_retention_days after terminal_at.
-- The backfill below rewrites every terminal intent once: minutes for millions of
-- rows, longer than the pool's statement timeout (60 s). It takes the rows' locks
-- until the migration commits (a late payment to one of them waits for it).
SET LOCAL statement_timeout = 0;

ALTER TABLE intents ADD COLUMN terminal_at TIMESTAMPTZ;

-- Existing terminal intents: their last update is their terminal transition or later
-- (a late payment updates the row), so the window they get is never shorter.
UPDATE intents SET terminal_at = updated_at
 WHERE status IN ('COMPLETED', 'EXPIRED', 'REFUNDED', 'CANCELLED');

CREATE FUNCTION intentd_intent_terminal_at() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER intents_terminal_at BEFORE INSERT OR UPDATE ON intents
    FOR EACH ROW EXECUTE FUNCTION intentd_intent_terminal_at();

-- The watched set's reads (adapters/native_intents.py): the live intents in id order
-- (a poller's first load), and the ended ones by end time (the first load's recent ones,
-- and the sweep of those leaving the window), each a range scan of its own index.
CREATE INDEX intents_live ON intents (id) WHERE terminal_at IS NULL;
CREATE INDEX intents_ended ON intents (terminal_at, id) WHERE terminal_at IS NOT NULL;
