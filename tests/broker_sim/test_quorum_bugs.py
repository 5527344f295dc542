"""The fleet finds a quorum's bugs: a short `controller-failover` run with a
fixed seed against three voters of the real daemon with one of the quorum's safety checks off
(tests/broker_sim/broken_daemon.py's `QUORUM_BUGS`) exits 1 and names the violation; the same runs
against the real daemon are clean.

The run is the user's command (`python -m broker_sim run --quorum 3 --quorum-data-dir DIR`, the
planted bug given with the hidden `--controller-module`/`--controller-args`), so the verdict comes
from the fleet's faults and probes (a write at the node it cut off or paused, pre-votes for a stale
log), its journal, and the quorum check of the three logs. Nothing in broker_sim knows these bugs
(test_broken_quorum.py shows each on the wire). The simulator finds every one of them
(tests/broker_sim/sim/test_planted_bugs.py); the wall-clock runs here, over real TCP, the fleet's
proxies and real timers, take `WALL_CLOCK`: a write answered before it commits, and a follower's
log kept past where it diverged. Each run is short (the quorum's timeouts 500/1000
ms): seed 4 for 14 s is one cut of the leader (the write at it, a new leader, the heal, then quiet
for the divergent-tail rule); seed 2 for 10 s cuts a follower off (the write lands on a follower).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from .broken_daemon import QUORUM_BUGS
from .fleet_command import run_fleet_command

pytestmark = pytest.mark.slow  # tens of seconds each: handed out first (tests/conftest.py)

#: (seed, duration): the leader cut off at about 4.3 s for 3.4 s, nothing after (so that the quorum is whole
#: for the last 6 s, twice what quorum-divergent-tail needs, should the cut begin late on a loaded machine)
LEADER_CUT = (4, 14)
FOLLOWER_CUT = (2, 10)  # a follower cut off at about 4.1 s for 3.2 s
# bug -> (seed, duration), and the rules of which at least one must be reported
CAUGHT: dict[str, tuple[tuple[int, int], set[str]]] = {
    "answer-before-commit": (LEADER_CUT, {"topic-lost", "ack-lost", "quorum-acked-on-node"}),
    "vote-for-shorter-log": (LEADER_CUT, {"quorum-stale-vote"}),
    "keep-divergent-tail": (LEADER_CUT, {"quorum-divergent-tail"}),
    "leader-never-resigns": (LEADER_CUT, {"quorum-deposed-leader"}),
    "old-controller-epoch": (LEADER_CUT, {"controller-epoch-leader", "observed-controller-epoch"}),
    "follower-answers": (FOLLOWER_CUT, {"topic-lost", "ack-lost", "registration-lost"}),
}

#: the quorum bugs the wall-clock fleet is run against (see the module's rules)
WALL_CLOCK = ("answer-before-commit", "keep-divergent-tail")


def run_quorum(directory: Path, seed: int, duration: int, bug: str | None) -> tuple[int, dict[str, Any]]:
    directory.mkdir(parents=True, exist_ok=True)
    planted = [] if bug is None else ["--controller-module=tests.broker_sim.broken_daemon"]
    planted += [] if bug is None else [f"--controller-args={shlex.join(['--bug', bug])}"]
    done = run_fleet_command(
        "run",
        "--quorum=3",
        f"--quorum-data-dir={directory / 'quorum'}",
        "--scenario=controller-failover",
        f"--seed={seed}",
        f"--duration={duration}",
        "--brokers=5",
        "--topics=3",
        "--partitions=4",
        "--replication-factor=3",
        "--heartbeat-ms=1000",
        "--session-timeout-ms=3000",
        "--quorum-election-timeout-ms=500",
        "--quorum-fetch-timeout-ms=1000",
        f"--report={directory / 'run.json'}",
        *planted,
        timeout=150,
    )
    report = directory / "run.json"
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, json.loads(report.read_text())


def rules_reported(report: dict[str, Any]) -> set[str]:
    return {violation["rule"] for violation in report["check"]["violations"]}


def test_every_quorum_bug_says_what_must_report_it() -> None:
    assert set(CAUGHT) == set(QUORUM_BUGS) and set(WALL_CLOCK) <= set(QUORUM_BUGS)


@pytest.mark.parametrize("seed, duration", sorted({run for run, _rules in CAUGHT.values()}))
def test_the_same_runs_against_the_real_quorum_are_clean(tmp_path: Path, seed: int, duration: int) -> None:
    status, report = run_quorum(tmp_path, seed, duration, None)
    assert (status, rules_reported(report), report["outcome"]["failures"]) == (0, set(), [])
    assert report["check"]["how"] == "quorum"
    probes = report["stats"]["probes"]  # the fleet wrote at the node it cut off, and asked for stale pre-votes
    assert sum(count for name, count in probes.items() if name.startswith("write-at-faulted-node:")) == 1
    assert probes.get("stale-pre-vote:refused", 0) > 0 and "stale-pre-vote:granted" not in probes


@pytest.mark.parametrize("bug", WALL_CLOCK)
def test_a_broken_quorum_is_reported(tmp_path: Path, bug: str) -> None:
    (seed, duration), rules = CAUGHT[bug]
    status, report = run_quorum(tmp_path, seed, duration, bug)
    assert status == 1 and rules_reported(report) & rules, (rules_reported(report), report["outcome"]["failures"])
