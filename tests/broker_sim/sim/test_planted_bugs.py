"""Every planted bug of tests/broker_sim/broken_daemon.py is found by the simulator: `python -m
broker_sim sim`, the bug patched into the controllers it runs, exits 1 naming one of the rules that
must report it, while the same seeds of the correct controllers are clean. A single controller's
bugs (`BUGS`, their rules test_fleet_finds_bugs.py's `CAUGHT`) over `chaos` seeds with one voter; a
quorum's (`QUORUM_BUGS`, their rules test_quorum_bugs.py's `CAUGHT`) over three voters, in the
scenario that provokes each: a failover of the controller, or a leader partitioned away (the
divergent tail a new leader must cut).

The simulator runs the fleet's whole schedule on a simulated clock (40 simulated seconds in about
three real ones here), so each bug is judged on every schedule alike; the wall-clock fleet runs a
sample of the bugs over real TCP and real timers (test_fleet_finds_bugs.py, test_quorum_bugs.py).
"""

from __future__ import annotations

import pytest

from tests.broker_sim import test_quorum_bugs
from tests.broker_sim.broken_daemon import BUGS, QUORUM_BUGS
from tests.broker_sim.sim.test_sim import named_rules, sim_command
from tests.broker_sim.test_fleet_finds_bugs import CAUGHT

#: seeds 0 to SEEDS - 1, the default 40 simulated seconds each
SEEDS = 3
#: the scenario and voters of each quorum bug (any other: controller-failover, three voters); None:
#: the Raft scenario's seeded number of voters
QUORUM_SCENARIOS: dict[str, tuple[str, int | None]] = {"keep-divergent-tail": ("leader-partitioned", None)}


def simulate(*patches: str, scenario: str = "chaos", voters: int | None = 1) -> tuple[int, set[str], str]:
    """(exit status, the rules the violations name, output) of `SEEDS` seeds of `scenario`."""
    arguments = ["--seeds", str(SEEDS), "--scenario", scenario, "--stop-at-first"]
    arguments += [] if voters is None else ["--voters", str(voters)]
    done = sim_command(*arguments, *(f"--patch={patch}" for patch in patches))
    return done.returncode, named_rules(done.stdout), done.stdout + done.stderr


@pytest.mark.parametrize(
    ("scenario", "voters"), [("chaos", 1), ("controller-failover", 3), ("leader-partitioned", None)]
)
def test_the_correct_controllers_are_clean_on_the_same_seeds(scenario: str, voters: int | None) -> None:
    status, named, out = simulate(scenario=scenario, voters=voters)
    assert (status, named) == (0, set()), out


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_planted_bug_is_found_by_the_simulator(bug: str) -> None:
    status, named, out = simulate(f"tests.broker_sim.broken_daemon:{BUGS[bug].__name__}")
    assert status == 1 and named & CAUGHT[bug], out


@pytest.mark.parametrize("bug", sorted(QUORUM_BUGS))
def test_every_planted_quorum_bug_is_found_by_the_simulator(bug: str) -> None:
    scenario, voters = QUORUM_SCENARIOS.get(bug, ("controller-failover", 3))
    patch = f"tests.broker_sim.broken_daemon:{QUORUM_BUGS[bug].__name__}"
    status, named, out = simulate(patch, scenario=scenario, voters=voters)
    _run, rules = test_quorum_bugs.CAUGHT[bug]
    assert status == 1 and named & rules, out
