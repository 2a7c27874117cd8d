"""Evaluation: episode runner, metrics, live views (paper §4)."""
