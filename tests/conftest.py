"""Shared test configuration: a deterministic, CI-sized Hypothesis profile."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fencer",
    max_examples=int(os.environ.get("FENCER_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("CI") == "true",
)
settings.load_profile("fencer")
