"""Benchmarks, run on demand (make bench, bench-core, bench-log, bench-daemon).

Each prints its ratios against a baseline measured in the same run.
"""
