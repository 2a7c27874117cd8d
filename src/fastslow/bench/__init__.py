"""Benchmarks printing side-by-side ratios; each ends with one JSON line."""
