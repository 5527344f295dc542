"""Every planted bug of a single controller (tests/broker_sim/broken_daemon.py's `BUGS`) is found by
the simulator: `python -m broker_sim sim` over `chaos` seeds, the bug patched into the controller it
runs, exits 1 naming one of the rules that must report it (test_fleet_finds_bugs.py's `CAUGHT`),
while the same seeds of the correct controller are clean.

The simulator runs the fleet's whole schedule on a simulated clock (40 simulated seconds in about
three real ones here), so each bug is judged on every schedule alike; the wall-clock fleet runs a
sample of the bugs over real TCP and real timers (test_fleet_finds_bugs.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.broker_sim.broken_daemon import BUGS
from tests.broker_sim.test_fleet_finds_bugs import CAUGHT
from tests.e2e.daemon_process import ROOT

#: seeds 0 to SEEDS - 1 of `chaos`, one controller, the default 40 simulated seconds each
SEEDS = 3


def simulate(*patches: str) -> tuple[int, set[str], str]:
    """(exit status, the rules the violations name, stdout) of `SEEDS` chaos seeds."""
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", str(SEEDS), "--scenario", "chaos"]
    command += ["--voters", "1", "--stop-at-first", *(f"--patch={patch}" for patch in patches)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    named = {line.split("]")[0].strip(" [") for line in done.stdout.splitlines() if line.startswith("  [")}
    return done.returncode, named, done.stdout + done.stderr


def test_the_correct_controller_is_clean_on_the_same_seeds() -> None:
    status, named, out = simulate()
    assert (status, named) == (0, set()), out


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_planted_bug_is_found_by_the_simulator(bug: str) -> None:
    status, named, out = simulate(f"tests.broker_sim.broken_daemon:{BUGS[bug].__name__}")
    assert status == 1 and named & CAUGHT[bug], out
