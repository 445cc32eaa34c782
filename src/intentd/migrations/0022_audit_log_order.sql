-- intentd: no-transaction
-- intentd schema, version 22: the audit log's page order (adapters/audit_log.py).
-- The writing transaction's id, then the record's id. A page shows only records of
-- transactions older than every transaction still running (pg_snapshot_xmin), so a
-- record that commits late always sorts after (newer than) every record already
-- shown: a cursor paging newest first never skips it. Existing records, all
-- committed, get 0: older than every later one, in id order.
--
-- Applied outside a transaction, so that the log (written with every change a user
-- or a key makes) is never locked for long; each statement is safe to run again.
-- One ALTER with both steps: the records already there get 0, every later one its
-- transaction's id (no moment in between when a new record would get 0). A catalog
-- change, no rewrite, and no row trigger runs (the table stays append-only); it waits
-- for the table's lock behind open transactions: give up after a few seconds (the
-- migration fails and is run again) rather than stall the changes queued behind it.
SET lock_timeout = '5s';
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS tx_id BIGINT NOT NULL DEFAULT 0,
    ALTER COLUMN tx_id SET DEFAULT (pg_current_xact_id()::text::bigint);
RESET lock_timeout;
-- The pages' order per client; built concurrently, changes go on being recorded.
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_by_client_tx ON audit_log (client_id, tx_id, id);
