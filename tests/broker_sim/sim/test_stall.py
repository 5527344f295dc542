"""A seed whose simulated clock stops for good (`broker_sim.sim.stall`): an endless loop or
computation stops the whole simulated cluster, and the simulator names it `[sim-stall]` with the
replay command instead of hanging until something outside kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import trio
import trio.testing

from broker_sim.sim.stall import Progress, Publisher, wait_watching

PLANTED = "tests.broker_sim.sim.planted"


def child_running(progress: Progress, sleeps: int, spin_s: float, spin_in_c: bool = False) -> int:
    """A forked child whose run sleeps `sleeps` simulated seconds (one at a time, real time passing
    meanwhile), then holds the clock for `spin_s` real seconds: in Python, or in one C-level call."""
    child = os.fork()
    if child:
        return child

    async def main() -> None:
        for _ in range(sleeps):
            await trio.sleep(1)
            time.sleep(0.05)
        if spin_in_c:
            time.sleep(spin_s)  # one call that holds the thread: no Python signal handler could run
        deadline = time.monotonic() + spin_s
        while time.monotonic() < deadline:
            pass

    try:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0), instruments=[Publisher(progress)])
    finally:
        os._exit(0)


def test_a_clock_that_stands_still_is_a_stall_at_its_simulated_time_and_the_child_is_killed() -> None:
    for in_c in (False, True):
        progress = Progress()
        started = time.monotonic()
        status, stood_at = wait_watching(child_running(progress, 3, 30.0, in_c), progress, stall_after_s=0.5)
        assert (status, stood_at) == (-signal.SIGKILL, 3.0)
        assert time.monotonic() - started < 10  # not the 30 s the child would hold it


def test_a_clock_that_moves_is_waited_for_to_the_end() -> None:
    progress = Progress()
    # 2 real seconds in all, never 0.5 s without the clock moving
    assert wait_watching(child_running(progress, 40, 0.0), progress, stall_after_s=0.5) == (0, None)


def sim(patch: str) -> subprocess.CompletedProcess[str]:
    # seed 2 of chaos draws a small record cap and an AlterPartition naming one partition 7 times
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", "2", "--scenario", "chaos"]
    command += ["--duration", "30", "--stall-after", "1", "--patch", f"{PLANTED}:{patch}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_a_controller_that_loops_for_ever_is_a_stall_with_its_replay_command() -> None:
    done = sim("pieces_never_advance")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "seed 2: stalled at " in done.stdout
    assert "[sim-stall] the simulated clock stood still at" in done.stdout, done.stdout
    assert "replay: python -m broker_sim sim --seeds 1 --first-seed 2 --scenario chaos" in done.stdout
    assert "0 of 1 seeds clean" in done.stdout
