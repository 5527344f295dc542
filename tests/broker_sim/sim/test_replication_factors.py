"""Topics of replication factor 1 and 2 in the simulation: half the seeds run their last topic at
a lower factor than the rest, so that partitions with one or two replicas meet the broker faults."""

from __future__ import annotations

from pathlib import Path

from broker_sim.journal import TopicCreated, read_journal
from broker_sim.sim.run import SimSpec, factors_of, run_seed


def test_half_the_seeds_lower_their_last_topics_factor() -> None:
    drawn = [factors_of(SimSpec(seed=seed)) for seed in range(300)]
    lowered = [factors for factors in drawn if factors]
    assert 120 <= len(lowered) <= 180
    assert {factors[:-1] for factors in lowered} == {(3,)} and {factors[-1] for factors in lowered} == {1, 2}
    assert factors_of(SimSpec(seed=1, replication_factors=(2, 2))) == (2, 2)
    assert factors_of(SimSpec(seed=1, topics=1)) == ()


def test_a_seed_with_a_topic_of_factor_one_runs_clean_with_its_topics_as_asked(tmp_path: Path) -> None:
    seed = next(seed for seed in range(50) if factors_of(SimSpec(seed=seed, scenario="chaos"))[-1:] == (1,))
    result = run_seed(SimSpec(seed=seed, scenario="chaos", duration_s=20.0), tmp_path)
    assert result.status == 0, result.violations + result.run.failures
    created = {
        e.topic: e.replication_factor for e in read_journal(tmp_path / "journal.jsonl") if isinstance(e, TopicCreated)
    }
    assert created[f"fleet-{seed}-0"] == 3 and created[f"fleet-{seed}-1"] == 1, created
