"""Execution: action planning, fee and nonce arithmetic, the executor loop (one per chain)."""
