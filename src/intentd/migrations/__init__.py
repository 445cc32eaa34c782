"""Numbered SQL migrations, applied by ``intentd migrate``."""
