"""The event log resource: an intent's events and every event of a client, paged."""
