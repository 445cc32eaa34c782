"""The payment modal's sessions: their signed tokens, their routes, the cap on the
intents a session creates."""
