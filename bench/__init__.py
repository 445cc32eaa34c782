"""Benchmarks of intentd (``python -m bench``); they print figures, they are not tests."""
