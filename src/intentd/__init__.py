"""intentd: backend for cross-chain payment intents."""

__version__ = "0.1.0"
