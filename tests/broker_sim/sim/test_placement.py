"""The controller's own placement under the fleet: chaos creates its scratch topics with a partition
count and a replication factor and no assignment, so the checker holds the controller's placement
to the log's rules (distinct replicas, the factor asked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from broker_sim.journal import CreateAnswered, read_journal

SEED = 2  # chaos; creates placed scratch topics of replication factor 2 and more within 40 s


def sim(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = ["-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", str(SEED), "--scenario", "chaos"]
    return subprocess.run([sys.executable, *command, *arguments], capture_output=True, text=True, timeout=300)


def test_chaos_asks_the_controller_to_place_its_scratch_topics(tmp_path: Path) -> None:
    done = sim("--keep", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    answers = [e for e in read_journal(tmp_path / f"seed-{SEED}" / "journal.jsonl") if isinstance(e, CreateAnswered)]
    placed = [e for e in answers if e.replication_factor > 0]
    assert placed and all(e.replicas == [] and e.error == 0 for e in placed), answers


def test_a_placement_that_repeats_a_broker_is_caught() -> None:
    done = sim("--patch", "tests.broker_sim.sim.planted:placement_repeats_a_broker")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[replica-set]" in done.stdout and "repeat an id" in done.stdout, done.stdout
