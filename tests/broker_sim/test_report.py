"""The run's verdict: exit statuses, the report's sections, and a report written whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker_sim.report import FinalCheck, RunResult, build_report, describe_lines, exit_status, write_report
from broker_sim.stats import FleetStats

CLEAN = FinalCheck(Path("data"), None, [], [])


def result(**changes: object) -> RunResult:
    outcome = RunResult(stats=FleetStats(), finished=True)
    for name, value in changes.items():
        setattr(outcome, name, value)
    return outcome


def with_violation() -> RunResult:
    outcome = result()
    outcome.stats.violations.append("stale replay accepted")
    return outcome


@pytest.mark.parametrize(
    ("outcome", "final", "status"),
    [
        (result(), None, 0),
        (result(), CLEAN, 0),
        (result(finished=False, unreachable="controller 127.0.0.1:1 unreachable"), None, 2),
        (with_violation(), None, 1),
        (result(), FinalCheck(Path("data"), None, [("isr-eligibility", "offset 12: fenced broker 3 in ISR")], []), 1),
        (result(), FinalCheck(Path("data"), None, [], ["corrupt batch at offset 40"]), 1),
        (result(finished=False, failures=["fleet process 1 (brokers 2-3) died"]), None, 1),
        (result(finished=False, interrupted=True), None, 130),
        (result(finished=False, interrupted=True), FinalCheck(Path("data"), None, [("r", "d")], []), 1),
        (result(finished=False), None, 1),
    ],
)
def test_exit_status(outcome: RunResult, final: FinalCheck | None, status: int) -> None:
    assert exit_status(outcome, final) == status


def test_the_report_lists_every_violation_and_the_check() -> None:
    outcome = with_violation()
    final = FinalCheck(Path("data"), Path("j"), [("isr-eligibility", "offset 12: fenced broker 3")], ["torn tail"])
    report = build_report({"seed": 1}, outcome, final, {"violations": 1}, {"report": Path("r.json"), "journal": None})
    assert report["violations"] == ["stale replay accepted", "offset 12: fenced broker 3"]
    assert report["check"] == {
        "data_dir": "data",
        "journal": "j",
        "violations": [{"rule": "isr-eligibility", "description": "offset 12: fenced broker 3"}],
        "problems": ["torn tail"],
    }
    assert report["outcome"]["exit_status"] == 1 and report["arguments"] == {"seed": 1}
    assert report["paths"] == {"report": "r.json", "journal": None}
    assert report["stats"] == outcome.stats.snapshot()
    assert list(describe_lines(outcome, final)) == [
        "violation (seen during the run): stale replay accepted",
        "violation of isr-eligibility: offset 12: fenced broker 3",
        "check problem: torn tail",
    ]


def test_a_report_replaces_the_old_one_whole(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "run.json"
    write_report(path, {"format": 1, "run": 1})
    write_report(path, {"format": 1, "run": 2})
    assert json.loads(path.read_text()) == {"format": 1, "run": 2}
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]  # no temporary left
