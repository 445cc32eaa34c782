-- intentd schema, version 4: wake the executor of a chain when one of its actions
-- becomes ready (inserted ready, or put back to ready by a retry). The notification
-- is delivered when the writing transaction commits; the payload is the chain name.
-- Writers of actions need not NOTIFY themselves.
CREATE FUNCTION intentd_notify_action_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('intentd_actions', NEW.chain);
    RETURN NULL;
END;
$$;

CREATE TRIGGER actions_ready_notify
    AFTER INSERT OR UPDATE OF status ON actions
    FOR EACH ROW WHEN (NEW.status = 'ready')
    EXECUTE FUNCTION intentd_notify_action_ready();
