-- intentd schema, version 21: the audit log's page order (adapters/audit_log.py).
-- The writing transaction's id, then the record's id. A page shows only records of
-- transactions older than every transaction still running (pg_snapshot_xmin), so a
-- record that commits late always sorts after (newer than) every record already
-- shown: a cursor paging newest first never skips it. Existing records, all
-- committed, get 0: older than every later one, in id order. (Adding a column runs
-- no row trigger: the table stays append-only.)
ALTER TABLE audit_log ADD COLUMN tx_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_log ALTER COLUMN tx_id SET DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX audit_log_by_client_tx ON audit_log (client_id, tx_id, id);
