"""`make mutation-fleet`'s driver (benchmarks/mutation_fleet.py), its pure parts only: the sample, the
annotation filter, the classification of outcomes and the summary. The run itself (cosmic-ray, a daemon
and a fleet per mutant) takes most of an hour and is not part of the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import mutation_fleet
from benchmarks.mutation_fleet import (
    VERDICT,
    Mutant,
    Record,
    annotation_spans,
    classify,
    in_annotation,
    invalid_modules,
    operator_kind,
    package_of,
    render_markdown,
    sample,
    short_diff,
    summarize,
    tail,
    trial_verdict,
)
from tests.e2e.daemon_process import ROOT


def mutant(i: int, path: str = "controller/ops/brokers.py", operator: str = "core/AddNot") -> Mutant:
    return Mutant(job_id=f"job-{i}", path=path, operator=operator, occurrence=i, line=10 + i, column=4)


POPULATION = [
    mutant(i, path, operator)
    for i in range(40)
    for path in ("controller/ops/brokers.py", "controller/state/model.py", "controller/control/links.py")
    for operator in ("core/AddNot", "core/NumberReplacer")
]


def test_the_sample_is_the_same_for_a_seed_whatever_the_order_and_ids() -> None:
    first = sample(POPULATION, 25, seed=3)
    # cosmic-ray's job ids are new uuids every init, its rows in any order: neither may change the sample
    renamed = [Mutant(f"other-{m.key}", m.path, m.operator, m.occurrence, m.line, m.column) for m in POPULATION]
    again = sample(list(reversed(renamed)), 25, seed=3)
    assert len(first) == 25 and len(set(first)) == 25
    assert [m.key for m in first] == [m.key for m in again]
    assert [m.key for m in sample(POPULATION, 25, seed=4)] != [m.key for m in first]


def test_no_sample_or_one_as_large_as_the_population_is_all_of_it() -> None:
    assert len(sample(POPULATION, None, seed=1)) == len(POPULATION)
    assert len(sample(POPULATION, 10_000, seed=1)) == len(POPULATION)
    assert sample(POPULATION, 0, seed=1) == []


def test_mutants_inside_annotations_are_found_and_nothing_else() -> None:
    lines = [
        "from __future__ import annotations",
        "X = int | None",
        "def f(a: int | None, b=1 | 2) -> dict[str, int | None]:",
        "    y: list[int | str] = [a | b]",
        "    return {'é': a | 1}",
        "é = 0; z: int | None = 2 | 3",
    ]
    spans = annotation_spans("\n".join(lines) + "\n")

    def at(line: int, text: str) -> tuple[int, int]:  # where `text` starts on `line`, in characters
        return (line, lines[line - 1].index(text))

    assert in_annotation(at(3, "| None,"), spans)  # a: int | None
    assert in_annotation(at(3, "| None]"), spans)  # -> dict[str, int | None]
    assert in_annotation(at(4, "| str"), spans)  # y: list[int | str]
    assert in_annotation(at(6, "| None"), spans)  # after a non-ASCII character: columns in characters
    assert not in_annotation(at(2, "|"), spans)  # a type alias is evaluated
    assert not in_annotation(at(3, "| 2"), spans)  # a default is evaluated
    assert not in_annotation(at(4, "| b"), spans)  # the value is evaluated
    assert not in_annotation(at(5, "|"), spans)
    assert not in_annotation(at(6, "| 3"), spans)


def test_packages_and_kinds() -> None:
    assert package_of("controller/ops/alter_partition.py") == "controller/ops"
    assert package_of("controller/state/model.py") == "controller/state"
    assert operator_kind("core/ReplaceComparisonOperator_Eq_NotEq") == "ReplaceComparisonOperator"
    assert operator_kind("core/ReplaceBinaryOperator_BitOr_Sub") == "ReplaceBinaryOperator"
    assert operator_kind("core/NumberReplacer") == "NumberReplacer"


def verdict_line(outcome: str, reason: str) -> str:
    return "noise\n" + VERDICT + json.dumps({"outcome": outcome, "reason": reason, "seeds": [1], "seconds": 9.5})


@pytest.mark.parametrize(
    ("worker", "test", "output", "expected"),
    [
        (None, None, None, "pending"),
        ("SKIPPED", None, "not in the sample", "skipped"),
        ("NORMAL", "KILLED", "timeout", "timeout"),  # cosmic-ray's own timeout
        ("NORMAL", "KILLED", verdict_line("killed", "violations: fenced-leader"), "killed"),
        ("NORMAL", "KILLED", verdict_line("killed", "the daemon did not start"), "killed"),
        ("NORMAL", "KILLED", verdict_line("timeout", "the fleet run overran its bound"), "timeout"),
        ("NORMAL", "KILLED", verdict_line("incompetent", "not valid Python: controller/ops/x.py"), "incompetent"),
        ("NORMAL", "SURVIVED", verdict_line("survived", "clean fleet runs, seeds 1,2"), "survived"),
        ("NORMAL", "KILLED", "Traceback (most recent call last): ...", "incompetent"),  # no verdict: the harness
        ("EXCEPTION", "INCOMPETENT", "Traceback ...\nValueError", "incompetent"),
        ("NO-TEST", None, None, "incompetent"),
    ],
)
def test_classification(worker: str | None, test: str | None, output: str | None, expected: str) -> None:
    assert classify(worker, test, output)[0] == expected


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ({"started": False}, "killed"),
        ({"timed_out": True}, "timeout"),
        ({"fleet_status": 1, "rules": ["ack-lost"]}, "killed"),
        ({"fleet_status": 0, "daemon_died": True}, "killed"),
        ({"fleet_status": 2}, "killed"),
        ({"fleet_status": 1}, "killed"),  # a check problem, a failed fleet process
        ({"fleet_status": 1, "report": False}, "incompetent"),  # no report: the harness, not the mutant
        ({"fleet_status": 0}, None),  # clean: the next seed
    ],
)
def test_one_fleet_runs_verdict(run: dict[str, object], expected: str | None) -> None:
    arguments: dict[str, object] = {
        "started": True,
        "fleet_status": None,
        "timed_out": False,
        "daemon_died": False,
        "rules": (),
        "report": True,
    }
    verdict = trial_verdict(**{**arguments, **run})  # type: ignore[arg-type]
    assert (verdict[0] if verdict else None) == expected


def test_the_summary_counts_scores_and_groups_the_survivors() -> None:
    records = [
        Record(mutant(1), "killed", "violations: ack-lost"),
        Record(mutant(2), "killed", "the daemon did not start"),
        Record(mutant(3, operator="core/ReplaceComparisonOperator_Eq_NotEq"), "survived", "clean", "-a\n+b"),
        Record(mutant(4, "controller/state/model.py"), "survived", "clean", "-c\n+d"),
        Record(mutant(5), "timeout", "overran"),
        Record(mutant(6), "incompetent", "not valid Python"),
        Record(mutant(7), "killed", "violations: ack-lost", seconds=20.0),
    ]
    summary = summarize(records, {"commit": "abc", "started_epoch": 0, "wall_seconds": 60})
    assert summary["counts"] == {"killed": 3, "survived": 2, "timeout": 1, "incompetent": 1, "pending": 0}
    assert summary["score"] == pytest.approx(3 / 5)
    assert summary["score_timeouts_killed"] == pytest.approx(4 / 6)
    assert set(summary["survivors_by_kind"]) == {"AddNot", "ReplaceComparisonOperator"}
    assert {p: len(s) for p, s in summary["survivors_by_package"].items()} == {
        "controller/ops": 1,
        "controller/state": 1,
    }
    assert summary["per_package"]["controller/ops"] == {"killed": 3, "survived": 1, "timeout": 1, "incompetent": 1}
    assert summary["kill_reasons"] == {"violations: ack-lost": 2, "the daemon did not start": 1}
    text = render_markdown(summary)
    assert "score killed / (killed + survived): **60.0%**" in text
    assert "`controller/state/model.py:14` core/AddNot" in text and "+d" in text
    json.dumps(summary)  # summary.json


def test_an_empty_run_has_no_score() -> None:
    summary = summarize([], {"started_epoch": 0})
    assert summary["score"] is None and "n/a" in render_markdown(summary)


def test_diffs_name_the_files_as_in_the_repository(tmp_path: Path) -> None:
    diff = "--- mutation diff ---\n--- a//tmp/x/tree/controller/ops/a.py\n+++ b//tmp/x/tree/controller/ops/a.py\n-x\n+y"
    assert short_diff(diff, Path("/tmp/x/tree")).splitlines()[:2] == [
        "--- a/controller/ops/a.py",
        "+++ b/controller/ops/a.py",
    ]


def test_a_mutant_that_is_not_python_is_found(tmp_path: Path) -> None:
    tree = tmp_path
    (tree / "controller" / "ops").mkdir(parents=True)
    (tree / "controller" / "ops" / "good.py").write_text("def f(*, a: int) -> int:\n    return a\n")
    assert invalid_modules(tree) == []
    (tree / "controller" / "ops" / "bad.py").write_text("def f(//, a: int) -> int:\n    return a\n")
    assert invalid_modules(tree) == ["controller/ops/bad.py"]


def test_the_script_runs_and_the_makefile_target_calls_it() -> None:
    helped = subprocess.run(
        [sys.executable, "benchmarks/mutation_fleet.py", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert helped.returncode == 0 and "trial" in helped.stdout
    dry = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "mutation-fleet", "SAMPLE=7", "SEED=3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert "benchmarks/mutation_fleet.py run --sample 7 --seed 3 --out mutation-out" in dry.stdout


def test_mutation_sim_judges_the_same_sample_by_simulation() -> None:
    dry = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "mutation-sim", "SAMPLE=7", "SEED=3", "SIM_SEEDS=4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert "mutation_fleet.py run --judge sim --sim-seeds 4 --sample 7 --seed 3 --out mutation-sim-out" in dry.stdout
    helped = subprocess.run(
        [sys.executable, "benchmarks/mutation_fleet.py", "trial", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert "--judge" in helped.stdout and "--sim-seeds" in helped.stdout


def test_the_sim_judges_tree_takes_the_mutated_controller_only(tmp_path: Path) -> None:
    tree, fleet = tmp_path / "tree", tmp_path / "fleet"
    for copy in (tree, fleet):
        for name in mutation_fleet.COPIED:
            (copy / name).mkdir(parents=True)
    judge = mutation_fleet.judge_tree(tmp_path, tree, fleet)
    assert (judge / "controller").resolve() == (tree / "controller").resolve()
    assert (judge / "broker_sim").resolve() == (fleet / "broker_sim").resolve()
    assert (judge / "protocol").resolve() == (fleet / "protocol").resolve()


def test_a_kills_evidence_is_the_tail_of_its_files(tmp_path: Path) -> None:
    log = tmp_path / "fleet.out"
    log.write_text("".join(f"line {i} " + "x" * 400 + "\n" for i in range(10)))
    assert [line[:6] for line in tail(log)] == [f"line {i}" for i in range(5, 10)]
    assert all(len(line) == 300 for line in tail(log))
    assert tail(tmp_path / "missing") == []
    record = Record(mutant(1), "killed", "the daemon died during the run", evidence={"daemon": ["Traceback"]})
    assert record.as_json()["evidence"] == {"daemon": ["Traceback"]}
