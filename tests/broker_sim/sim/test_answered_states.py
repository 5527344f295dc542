"""Answers held to the log under simulation: a PREFERRED election answered elected has its
preferred replica lead, an AlterReplicaState answered NONE has the replica offline or online, and
no partition change record changes nothing. Each planted bug below survived every simulated seed
before these rules (the controller answered right and wrote wrong, or wrote nothing)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.daemon_process import ROOT


@pytest.mark.parametrize(
    ("patch", "scenario", "rule"),
    [
        ("online_taken_for_offline", "disk-failures", "replica-state-answer"),
        ("preferred_election_not_written", "chaos", "preferred-answer"),
        ("partition_change_never_a_noop", "chaos", "change-noop"),
    ],
)
def test_a_planted_answer_bug_is_named(patch: str, scenario: str, rule: str) -> None:
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", "0", "--scenario", scenario]
    command += ["--duration", "30", "--patch", f"tests.broker_sim.sim.planted:{patch}"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and f"[{rule}]" in done.stdout, done.stdout + done.stderr
