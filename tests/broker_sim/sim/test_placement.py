"""The controller's own placement under the fleet: chaos creates its scratch topics with a partition
count and a replication factor and no assignment, so the checker holds the controller's placement
to the log's rules (distinct replicas, the factor asked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from broker_sim.journal import CreateAnswered, read_journal
from broker_sim.sim.cluster import NodeSettings

SEED = 2  # chaos; creates placed scratch topics of replication factor 2 and more within 40 s


def sim(*arguments: str, seed: int = SEED) -> subprocess.CompletedProcess[str]:
    command = ["-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", str(seed), "--scenario", "chaos"]
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


DEFAULTS_SEED = 27  # chaos; its controller's default factor is 3, and it places a topic at factor 1


def test_a_seed_may_run_the_controller_with_topic_defaults_of_its_own() -> None:
    drawn = [NodeSettings.drawn(seed, 3) for seed in range(200)]
    own = [(s.default_partitions, s.default_replication_factor) for s in drawn if s.default_partitions != 1]
    assert 70 <= len(own) <= 130 and all(2 <= p <= 4 and 2 <= f <= 3 for p, f in own), own
    assert NodeSettings().default_replication_factor == NodeSettings().default_partitions == 1  # Kafka's
    assert NodeSettings.drawn(DEFAULTS_SEED, 3).default_replication_factor == 3


def test_a_factor_of_one_taken_for_the_default_is_caught() -> None:
    done = sim("--patch", "tests.broker_sim.sim.planted:a_factor_of_one_taken_for_the_default", seed=DEFAULTS_SEED)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[topic-lost]" in done.stdout and "replica counts [3], not 1" in done.stdout, done.stdout
