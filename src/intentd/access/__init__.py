"""Who may do what: console roles and their permissions, API key scopes, and the pure
decisions of signing in (passwords, second factor, sessions, throttling) and of refund
approval. No I/O: the adapters store what these modules decide (docs/console.md)."""
