"""A record cap in the simulation: one seed in three runs its controllers with a cap just large
enough to create a topic, so that a broker's fencing or controlled shutdown spans several batches,
written as one metadata transaction (KIP-868) that kills and failovers may cut. The real
controller runs such a seed clean and writes its transactions; one that leaves a transaction open
is caught, and its standbys' refusal to replay the log is a failure of the run, not of the
simulator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from broker_sim.sim.cluster import NodeSettings
from controller.state.controller_state import ControllerConfig

SEED = 10  # draws a small cap; rolling-restart's controlled shutdowns span several batches
PARTITIONS = 3  # the simulator's topics'


def sim(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = ["--seeds", "1", "--first-seed", str(SEED), "--scenario", "rolling-restart", *arguments]
    return subprocess.run(
        [sys.executable, "-m", "broker_sim", "sim", *command], capture_output=True, text=True, timeout=300
    )


def test_a_third_of_the_seeds_draw_a_cap_that_still_creates_a_topic() -> None:
    caps = [NodeSettings.drawn(seed, PARTITIONS).max_records_per_operation for seed in range(300)]
    small = [cap for cap in caps if cap != ControllerConfig.max_records_per_operation]
    assert 70 <= len(small) <= 130
    assert set(small) == {PARTITIONS + 1, PARTITIONS + 2}  # a TopicRecord and a PartitionRecord each, or one more
    assert NodeSettings.drawn(SEED, PARTITIONS).max_records_per_operation <= PARTITIONS + 2


def test_a_seed_under_a_small_cap_writes_transactions_and_runs_clean(tmp_path: Path) -> None:
    done = sim("--keep", str(tmp_path))
    assert done.returncode == 0 and f"seed {SEED}: clean" in done.stdout, done.stdout + done.stderr
    node = tmp_path / f"seed-{SEED}" / "quorum" / "node-1"
    dumped = subprocess.run(
        [sys.executable, "-m", "controller", "dump-log", str(node)], capture_output=True, text=True, timeout=60
    )
    assert dumped.returncode == 0, dumped.stderr
    begun, ended = dumped.stdout.count("BEGIN_TRANSACTION_RECORD"), dumped.stdout.count("END_TRANSACTION_RECORD")
    assert begun >= 1 and begun == ended, dumped.stdout[-2000:]


def test_a_controller_that_leaves_a_transaction_open_fails_the_seed() -> None:
    done = sim("--patch", "tests.broker_sim.sim.planted:transaction_left_open")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[transaction-framing]" in done.stdout, done.stdout
    assert "crashed: ReplayError: the metadata log cannot be replayed" in done.stdout, done.stdout
    assert "the simulation itself failed" not in done.stdout
