"""A seed whose simulated clock stops for good (`broker_sim.sim.stall`): a task that never yields
stops the whole simulated cluster, and the simulator names it `[sim-stall]` with the replay
command instead of hanging until something outside kills it."""

from __future__ import annotations

import subprocess
import sys
import time

import trio
import trio.testing

from broker_sim.sim.stall import stall_watch


def watched(spin_s: float, sleeps: int) -> list[float]:
    """The simulated times `stall_watch` (every 0.2 real s) reports while a run first sleeps
    `sleeps` simulated seconds, one at a time, then spins for `spin_s` real seconds without yielding."""
    stalls: list[float] = []

    async def main() -> None:
        for _ in range(sleeps):
            await trio.sleep(1)
            time.sleep(0.05)  # real time passes while the simulated clock moves on
        deadline = time.monotonic() + spin_s
        while time.monotonic() < deadline:
            pass

    with stall_watch(stalls.append, every_s=0.2):
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return stalls


def test_a_clock_that_stands_still_is_reported_at_its_simulated_time() -> None:
    stalls = watched(spin_s=1.0, sleeps=3)
    assert stalls and set(stalls) == {3.0}


def test_a_clock_that_moves_is_never_reported() -> None:
    assert watched(spin_s=0.0, sleeps=30) == []  # 1.5 real s, the clock moving on every 0.05 s


def test_a_controller_that_loops_for_ever_is_a_stall_with_its_replay_command() -> None:
    # seed 2 of chaos draws a small record cap and an AlterPartition naming one partition 7 times
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", "2", "--scenario", "chaos"]
    command += [
        "--duration",
        "30",
        "--stall-after",
        "1",
        "--patch",
        "tests.broker_sim.sim.planted:pieces_never_advance",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[sim-stall] the simulated clock stood still at" in done.stdout, done.stdout
    assert "replay: python -m broker_sim sim --seeds 1 --first-seed 2 --scenario chaos" in done.stdout
    assert "0 of 1 seeds clean" in done.stdout
