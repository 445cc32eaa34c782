"""The merchant's actions that both the API (a key) and the console (a user) take, with
their controls: refund approval and the audit record, each in the transaction of the
change (docs/console.md)."""
