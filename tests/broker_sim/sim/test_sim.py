"""The whole cluster under simulation (`broker_sim.sim`): three real daemons and the fleet's brokers in
one process on a simulated clock and network, the fleet's controller faults applied to them.

A seed runs clean against the real controller; the same seed run twice writes the same bytes (every
node's metadata log, snapshots and quorum-state, and the fleet's journal); and the simulation moves
faster than the clock on the wall (so thousands of schedules fit in minutes).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from broker_sim.sim.run import SimSpec, run_seed


def digests(directory: Path) -> dict[str, str]:
    """Every file's digest, but `meta.properties` (formatted once, with a random directory id and
    the time of formatting, as Kafka's storage tool writes it)."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != "meta.properties"
    }


def test_a_failover_seed_runs_clean_and_its_faults_happen(tmp_path: Path) -> None:
    result = run_seed(SimSpec(seed=0, duration_s=40), tmp_path)
    assert result.status == 0, result.violations
    assert result.run.finished and result.final is not None and result.final.problems == []
    journal = (tmp_path / "journal.jsonl").read_text()
    assert journal.count('"kind":"controller_fault"') >= 2  # the scenario's faults were applied
    assert journal.count('"kind":"registered"') >= 5
    assert result.simulated_s > 40


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    spec = SimSpec(seed=3, duration_s=30)
    run_seed(spec, tmp_path / "a")
    run_seed(spec, tmp_path / "b")
    first, second = digests(tmp_path / "a"), digests(tmp_path / "b")
    assert any(name.endswith(".log") for name in first) and "journal.jsonl" in first
    assert first == second
    other = SimSpec(seed=4, duration_s=30)
    run_seed(other, tmp_path / "c")
    assert digests(tmp_path / "c") != first
