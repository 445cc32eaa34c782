"""The chains resource: the configured chains and their tokens."""
