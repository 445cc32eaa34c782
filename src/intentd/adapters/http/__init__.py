"""Adapters to the HTTP endpoints of others (merchants\x27 webhook endpoints)."""
