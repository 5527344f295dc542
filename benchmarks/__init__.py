"""Benchmarks, run on demand: `make bench` (codec.py), `bench-core` (core.py), `bench-log`
(log.py), `bench-daemon` (daemon.py), `bench-fleet` (fleet.py), `bench-analytics`
(analytics.py), `bench-stalls` (stalls.py) and `soak` (soak.py); capture.py is run directly.

Each measures in one run on this machine; those with a baseline (codec.py: kio and a hand-written
decoder; daemon.py: an echo server; analytics.py: one plain Python process doing the same work,
same_work/; capture.py: the request path without capture) print their ratios against it,
measured in the same run.
"""
