"""Webhook delivery: signing, retry schedule, endpoint matching (pure) and the role."""
