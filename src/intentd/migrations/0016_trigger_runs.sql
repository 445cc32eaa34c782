-- intentd schema, version 16: trigger-processing's limits, shared by every API process
-- (issue 18 item 5; docs/api.md, "Trigger processing").
--
-- trigger_cooldowns: when the last call for an intent started. A call is admitted only
-- if that was at least api.trigger_cooldown seconds ago, set by a compare-and-set
-- (INSERT ... ON CONFLICT DO UPDATE ... WHERE): of two processes admitting a call for
-- one intent at once, one wins.
CREATE TABLE trigger_cooldowns (
    intent_id   BIGINT PRIMARY KEY REFERENCES intents (id) ON DELETE CASCADE,
    started_at  TIMESTAMPTZ NOT NULL
);

-- trigger_runs: the calls running now, one row each, by caller ('client:<uuid>' for an
-- API key's client, 'session:<id>' for a payment-modal session: a payer has slots of
-- its own, never the merchant's). A call deletes its row when it ends; a row whose
-- process died lapses at expires_at (its call's deadline and a margin).
CREATE TABLE trigger_runs (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    caller      TEXT NOT NULL,
    intent_id   BIGINT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX trigger_runs_caller ON trigger_runs (caller, expires_at);

-- One call of intentd_trigger_admit is one round trip and one transaction: the
-- intent's cooldown, then the caller's cap (callers of one name take turns on a
-- transaction advisory lock, so two processes never both take the last slot), then
-- the compare-and-set of the cooldown and the caller's row. Answers the run's id, or
-- NULL with the refusal's code and the seconds until a retry may pass.
--
-- Both functions commit without waiting for the WAL flush (synchronous_commit off,
-- for their own transaction only): what a crash of the server may lose is a limit's
-- last moments (a cooldown forgotten, a slot not counted, or one given back late, at
-- its lease), never money; and a call's admission costs no disk flush.
CREATE FUNCTION intentd_trigger_admit(
    p_intent BIGINT,
    p_caller TEXT,
    p_cooldown DOUBLE PRECISION,
    p_cap INTEGER,
    p_lease DOUBLE PRECISION,
    OUT run_id BIGINT,
    OUT refused TEXT,
    OUT retry_after DOUBLE PRECISION
) LANGUAGE plpgsql AS $$
DECLARE
    last_start TIMESTAMPTZ;
    running INTEGER;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT c.started_at INTO last_start FROM trigger_cooldowns c WHERE c.intent_id = p_intent;
    IF p_cooldown > 0 AND last_start > now() - make_interval(secs => p_cooldown) THEN
        refused := 'trigger_cooldown';
        retry_after := extract(epoch FROM last_start + make_interval(secs => p_cooldown) - now());
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(444468993, hashtext(p_caller));  -- 0x1A7E_0F01
    DELETE FROM trigger_runs r WHERE r.caller = p_caller AND r.expires_at <= now();
    SELECT count(*) INTO running FROM trigger_runs r WHERE r.caller = p_caller;
    IF running >= p_cap THEN
        refused := 'too_many_triggers';
        retry_after := 1;
        RETURN;
    END IF;
    INSERT INTO trigger_cooldowns AS c (intent_id, started_at) VALUES (p_intent, now())
    ON CONFLICT (intent_id) DO UPDATE SET started_at = greatest(c.started_at, EXCLUDED.started_at)
        WHERE p_cooldown = 0
            OR c.started_at <= EXCLUDED.started_at - make_interval(secs => p_cooldown);
    IF NOT FOUND THEN  -- another process admitted a call for it since the first look
        refused := 'trigger_cooldown';
        retry_after := p_cooldown;
        RETURN;
    END IF;
    INSERT INTO trigger_runs (caller, intent_id, expires_at)
    VALUES (p_caller, p_intent, now() + make_interval(secs => p_lease))
    RETURNING id INTO run_id;
END
$$;

-- The call ended: its slot is free.
CREATE FUNCTION intentd_trigger_done(p_run BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    DELETE FROM trigger_runs WHERE id = p_run;
END
$$;
