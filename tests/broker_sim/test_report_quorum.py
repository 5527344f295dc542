"""A run with its own quorum ends with the checker's quorum check over every node's data dir; a checker
without one would check each node's dir alone, its findings named by node and a note saying so."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from broker_sim import report
from broker_sim.journal import JournalWriter, PartitionAcked
from broker_sim.report import RunResult, describe_lines, run_quorum_check
from broker_sim.stats import FleetStats

from .check.logs import TOPIC_ID, LogBuilder


def quorum_dirs(root: Path) -> list[Path]:
    """Three nodes holding the same log (a cluster of four brokers and one topic)."""
    dirs = []
    for node in (1, 2, 3):
        log = LogBuilder(root / f"node-{node}")
        log.cluster()
        dirs.append(log.write())
    return dirs


def journal_acking_a_change_no_log_has(path: Path) -> Path:
    writer = JournalWriter(path)
    writer.write(PartitionAcked(1, 1, 1, 2, str(TOPIC_ID), 0, [1, 2], [], 1, 0, 7, [1, 2]))
    writer.close()
    return path


def test_the_quorum_check_takes_every_node(tmp_path: Path) -> None:
    dirs = quorum_dirs(tmp_path / "q")
    final = run_quorum_check(tmp_path / "q", dirs, None)
    assert (final.how, final.violations, final.problems, final.nodes) == ("quorum", [], [], tuple(dirs))
    assert final.describe() == f"the quorum's 3 nodes in {tmp_path / 'q'}"
    lost = run_quorum_check(tmp_path / "q", dirs, journal_acking_a_change_no_log_has(tmp_path / "j.jsonl"))
    assert [rule for rule, _ in lost.violations] == ["ack-lost"]


def test_a_checker_without_the_quorum_check_checks_each_node_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.import_module

    def without_quorum(name: str, package: str | None = None) -> Any:
        if name == "broker_sim.check.quorum":
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(report.importlib, "import_module", without_quorum)
    dirs = quorum_dirs(tmp_path / "q")
    final = run_quorum_check(tmp_path / "q", dirs, journal_acking_a_change_no_log_has(tmp_path / "j.jsonl"))
    assert final.how == "each node" and final.problems == []
    assert [(rule, text.split(":")[0]) for rule, text in final.violations] == [
        ("ack-lost", "node-1"),
        ("ack-lost", "node-2"),
        ("ack-lost", "node-3"),
    ]
    assert final.describe() == f"the quorum's 3 nodes in {tmp_path / 'q'}, each node alone"
    assert "check note: the checker has no quorum check" in "\n".join(
        describe_lines(RunResult(stats=FleetStats()), final)
    )
