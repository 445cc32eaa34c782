"""The reports resource: CSV exports and the reconciliation, streamed."""
