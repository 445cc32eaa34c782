"""The intents resource: create, read, trigger-processing, list, cancel and refund,
and the refund approvals those commands may wait for."""
