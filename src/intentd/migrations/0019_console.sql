-- intentd schema, version 16: the merchant console (docs/console.md): API key scopes,
-- console users and their sign-in, the audit log, refund approvals.

-- API key scopes (access/scopes.py). NULL: every scope, what a key made before scopes
-- had, so existing keys keep working unchanged.
ALTER TABLE api_keys ADD COLUMN scopes TEXT[];

-- A console user belongs to one client and has one role (access/roles.py). An email
-- signs in to one account only (unique whatever its case). No password until the user
-- has used a sign-in link; a disabled user cannot sign in, and its sessions end.
-- The TOTP secret is sealed (AES-256-GCM under INTENTD_CONSOLE_KEY, bound to the user's
-- id); totp_last_step is the last time step accepted, so a code is never used twice.
CREATE TABLE console_users (
    id                  UUID PRIMARY KEY,
    client_id           UUID NOT NULL REFERENCES clients (id),
    email               TEXT NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    role                TEXT NOT NULL
                        CHECK (role IN ('owner', 'admin', 'developer', 'support', 'viewer')),
    password_hash       TEXT,
    password_changed_at TIMESTAMPTZ,
    totp_sealed         BYTEA,
    totp_enabled_at     TIMESTAMPTZ,
    totp_last_step      BIGINT,
    disabled_at         TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX console_users_email ON console_users (lower(email));
CREATE INDEX console_users_by_client ON console_users (client_id, created_at);

-- Recovery codes of a user's second factor: SHA-256 of each (they are random), one use each.
CREATE TABLE console_recovery_codes (
    user_id     UUID NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
    code_hash   TEXT NOT NULL,
    used_at     TIMESTAMPTZ,
    PRIMARY KEY (user_id, code_hash)
);

-- One-time sign-in links (intentd users create|link, the Team page): SHA-256 of the
-- token; used once, before expires_at.
CREATE TABLE console_signin_links (
    token_hash  TEXT PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ
);
CREATE INDEX console_signin_links_by_user ON console_signin_links (user_id);

-- Sessions: SHA-256 of the cookie's random id (a database read gives no session), the
-- CSRF token of the session, idle (last_seen_at) and absolute (expires_at) ends.
-- kind 'session' is a signed-in session; kind 'challenge' waits for the second factor.
CREATE TABLE console_sessions (
    id_hash         TEXT PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('session', 'challenge')),
    csrf_token      TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at      TIMESTAMPTZ NOT NULL,
    revoked_at      TIMESTAMPTZ,
    attempts        INTEGER NOT NULL DEFAULT 0,
    source          TEXT,
    user_agent      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX console_sessions_by_user ON console_sessions (user_id) WHERE revoked_at IS NULL;
CREATE INDEX console_sessions_by_end ON console_sessions (expires_at);

-- Sign-in throttling (access/throttle.py): failures per key ('account:<id>',
-- 'source:<address>', 'device:<hash>') in the current window, and the lock's end.
CREATE TABLE console_signin_throttle (
    key             TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL CHECK (failures >= 0),
    window_start    TIMESTAMPTZ NOT NULL,
    locked_until    TIMESTAMPTZ,
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX console_signin_throttle_by_age ON console_signin_throttle (updated_at);

-- Devices a user signed in from (a long-lived cookie): sign-ins from them are not held
-- by the account's lock, so failures from elsewhere cannot lock the owner out.
CREATE TABLE console_devices (
    token_hash      TEXT PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_devices_by_user ON console_devices (user_id);

-- The audit log: every state-changing action of a user, a key or the operator's CLI,
-- written in the transaction of the change it records. Append-only: no update, and a
-- delete only by the retention pruning (which sets intentd.audit_prune in its
-- transaction).
CREATE TABLE audit_log (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id       UUID NOT NULL,
    at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    actor_kind      TEXT NOT NULL CHECK (actor_kind IN ('user', 'key', 'cli', 'system')),
    actor_id        TEXT NOT NULL,
    actor_label     TEXT NOT NULL,
    action          TEXT NOT NULL,
    object_kind     TEXT NOT NULL,
    object_id       TEXT NOT NULL,
    mode            TEXT CHECK (mode IN ('test', 'live')),
    source          TEXT,
    result          TEXT NOT NULL,
    detail          JSONB NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_by_client ON audit_log (client_id, id);
CREATE INDEX audit_log_by_time ON audit_log (at);

CREATE FUNCTION intentd_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('intentd.audit_prune', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP;
END;
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION intentd_audit_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION intentd_audit_append_only();

-- A client's policies: the USD amount above which a refund (or a cancel that refunds)
-- waits for a second user's approval. No row: the console.refund_approval_above_usd
-- default; NULL: no approval needed.
CREATE TABLE client_policies (
    client_id                   UUID PRIMARY KEY REFERENCES clients (id),
    refund_approval_above_usd   NUMERIC CHECK (refund_approval_above_usd >= 0),
    updated_at                  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Refunds waiting for a second user's approval (merchant/refunds.py). One pending per
-- intent. amount is what the intent held when it was asked (base units of its asset
-- token); an approval executes only if the intent still holds no more than that.
CREATE TABLE refund_approvals (
    id                  UUID PRIMARY KEY,
    client_id           UUID NOT NULL,
    intent_id           BIGINT NOT NULL REFERENCES intents (id),
    command             TEXT NOT NULL CHECK (command IN ('cancel', 'refund')),
    mode                TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    amount              NUMERIC(78, 0) NOT NULL CHECK (amount >= 0),
    amount_usd          NUMERIC,
    status              TEXT NOT NULL
                        CHECK (status IN ('pending', 'executed', 'rejected', 'expired', 'failed')),
    requested_by_kind   TEXT NOT NULL CHECK (requested_by_kind IN ('user', 'key')),
    requested_by_id     TEXT NOT NULL,
    requested_by_label  TEXT NOT NULL,
    requested_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at          TIMESTAMPTZ NOT NULL,
    decided_by_id       TEXT,
    decided_by_label    TEXT,
    decided_at          TIMESTAMPTZ,
    outcome             TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX refund_approvals_one_pending ON refund_approvals (intent_id)
    WHERE status = 'pending';
CREATE INDEX refund_approvals_by_client ON refund_approvals (client_id, status, requested_at);

-- The console overview's figures of ended intents, by UTC day of terminal_at, summed
-- once per client and day after the day has settled (adapters/console_reads.py).
CREATE TABLE console_day_totals (
    client_id       UUID NOT NULL,
    day             DATE NOT NULL,
    source_chain    TEXT NOT NULL,
    symbol          TEXT NOT NULL,
    decimals        INTEGER NOT NULL,
    status          TEXT NOT NULL,
    count           BIGINT NOT NULL,
    amount          NUMERIC(78, 0) NOT NULL,
    usd             NUMERIC NOT NULL,
    PRIMARY KEY (client_id, day, source_chain, symbol, status)
);
CREATE TABLE console_days_done (
    client_id       UUID NOT NULL,
    day             DATE NOT NULL,
    PRIMARY KEY (client_id, day)
);
