-- intentd schema, version 12: clients as records, and the intent list (GET /intents).

-- Clients: a key names an existing client (intentd clients create NAME), so a typo
-- in `keys create --client` fails instead of founding a new tenant.
CREATE TABLE clients (
    id              UUID PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- Backfill: every client that already has keys or intents keeps its id. A key's
-- client is named as it was typed (api_keys.client_name, from which its id was derived);
-- a client seen only on intents (the CLI's intents.default_client_id, or a client whose
-- keys were deleted) has no known name, so it is named by its id, which is unique,
-- cannot collide with a chosen name, and shows the operator which rows it stands for.
INSERT INTO clients (id, name, created_at)
SELECT DISTINCT ON (client_id) client_id, client_name, created_at
  FROM api_keys ORDER BY client_id, created_at
ON CONFLICT DO NOTHING;
INSERT INTO clients (id, name, created_at)
SELECT client_id, client_id::text, min(created_at)
  FROM (SELECT client_id, created_at FROM api_keys
        UNION ALL SELECT client_id, created_at FROM intents) AS seen
 GROUP BY client_id
ON CONFLICT DO NOTHING;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_client_fk
    FOREIGN KEY (client_id) REFERENCES clients (id);

-- The list's order: the creating transaction's id, then the intent id. A reader sees
-- only intents of transactions older than every transaction still running
-- (pg_snapshot_xmin), so an intent that commits late always sorts after (newer than)
-- every intent already listed: a cursor never skips it (adapters/intent_list.py).
-- Existing intents, all committed, get 0: older than every later one, in id order.
ALTER TABLE intents ADD COLUMN created_tx BIGINT NOT NULL DEFAULT 0;
ALTER TABLE intents ALTER COLUMN created_tx SET DEFAULT (pg_current_xact_id()::text::bigint);

-- GET /intents: a client's intents in list order, alone or with one filter; the
-- session filter uses intents_by_session (0002).
CREATE INDEX intents_list ON intents (client_id, created_tx, id);
CREATE INDEX intents_list_status ON intents (client_id, status, created_tx, id);
CREATE INDEX intents_list_sender ON intents (client_id, sender, created_tx, id)
    WHERE sender IS NOT NULL;
CREATE INDEX intents_list_recipient ON intents (client_id, recipient, created_tx, id);
-- A created_at window (both bounds) is read through this one and then ordered
-- (adapters/intent_list.py); it covers the window's usual companions, so that read
-- stays in the index.
CREATE INDEX intents_list_created_at ON intents (client_id, created_at)
    INCLUDE (created_tx, id, source_chain, status);
CREATE INDEX intents_list_metadata ON intents USING gin (metadata jsonb_path_ops);
