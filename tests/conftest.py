"""Shared test configuration: a deterministic, CI-sized Hypothesis profile, and which tests share a worker."""

import os

import pytest
from hypothesis import HealthCheck, settings

# 25 examples per property (FENCER_HYPOTHESIS_EXAMPLES overrides; 30 until the 8-minute budget
# met the probes' and the rule map's checks, 2026-11-26): with every API version's codec
# checked against kio, 60 cost the suite 47 CPU seconds more than 40 (tests/protocol and
# tests/controller, 3:08 against 2:21 on 2 workers, 2026-11-26), and 40 about 15 more than 30 (116
# against 101 CPU s for tests/protocol, controller state and ops, raft): CPU a 2-core CI runs short
# of. CI derandomizes (the same examples every run); a focused run can ask for more.
settings.register_profile(
    "fencer",
    max_examples=int(os.environ.get("FENCER_HYPOTHESIS_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("CI") == "true",
)
settings.load_profile("fencer")

# Every JVM the suite starts (Spark's: the shared session, spark-submit, a standalone cluster's master,
# workers and executors, the jobs the demo and the Quick start run) is short-lived and small: the C1
# compiler alone costs about 40% less CPU than C1 + C2 here (a demo-sized `python -m analytics`: 34
# CPU s against 55, two runs each), and CPU is what the parallel suite runs out of on 2 cores. The
# benchmarks, run on demand (`make bench-analytics`), never set it: their figures are the JVM's defaults.
# (No collector is chosen here: the job picks its driver's, `analytics/job.py`, and a second choice
# stops the JVM: "Multiple garbage collectors selected".)
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")


# The suite runs under pytest-xdist with `--dist loadgroup` (the Makefile's `pytest` target): each test
# goes to whichever worker is free, except the tests that share something costly to build, which go to
# one worker together so it is built once: the analytics tests share one SparkSession (a JVM) and the
# scenario's decoded captures (session fixtures), the fleet scenarios share their four runs, and the bad
# input tests share one daemon (module fixtures).
SHARED_WORK = {
    "tests/analytics/": "spark-session",  # but OWN_SPARK, which start their own Spark
    "tests/broker_sim/test_fleet_scenarios.py": "fleet-scenarios",
    "tests/e2e/test_bad_input.py": "bad-input-daemon",
}
#: Tests under a SHARED_WORK prefix that start their own Spark (spark-submit, a standalone cluster):
#: in no group, so that they run beside the shared session's tests rather than after them.
OWN_SPARK = ("tests/analytics/test_cluster.py",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the tests' ids (its hook runs last)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The longest first (`slow`: tens of seconds each), so that no worker starts one near the end
    # while the others sit idle (xdist hands out tests in this order; its groups go first anyway).
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        for prefix, group in SHARED_WORK.items():
            if path.startswith(prefix) and path not in OWN_SPARK:
                item.add_marker(pytest.mark.xdist_group(group))
