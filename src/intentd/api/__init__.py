"""The HTTP API of the spec (``/api/v1``): see docs/api.md."""
