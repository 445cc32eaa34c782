"""Creating and presenting intents (shared by the CLI and the HTTP API)."""
