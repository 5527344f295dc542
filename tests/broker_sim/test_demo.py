"""`make demo` end to end, briefly: the controller, the fleet's chaos scenario, the check, the summary.

Needs the fleet engine and the checker: with the stand-in fleet and no
`broker_sim.check`, the check step fails and so does this test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analytics.job import parser as analytics_parser
from broker_sim.demo import DemoPaths, analytics_command
from tests.e2e.daemon_process import ROOT


def run_demo(output: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """The demo's script for 10 s, as `make demo` runs it (with `flags`)."""
    return subprocess.run(
        [sys.executable, "-m", "broker_sim.demo", "--seconds", "10", "--output", str(output), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_make_demo_runs_the_script_for_demo_seconds() -> None:
    dry = subprocess.run(["make", "-n", "demo", "DEMO_SECONDS=7"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert "-m broker_sim.demo --seconds 7 --output demo-output\n" in dry.stdout
    dry = subprocess.run(["make", "-n", "demo", "QUORUM=3"], cwd=ROOT, capture_output=True, text=True)
    assert "--output demo-output --quorum 3\n" in dry.stdout
    assert "/demo-output/" in (ROOT / ".gitignore").read_text().splitlines()


@pytest.mark.slow
def test_a_short_demo_end_to_end(tmp_path: Path) -> None:
    """Every step but the analytics job's JVM (about 35 CPU s of the 2-core suite's budget): the
    README's Quick start test runs that job on the same inputs (both captures and the journal), and
    the next test holds the demo's command to the job's own parser."""
    output = tmp_path / "demo-output"
    (output / "stale").mkdir(parents=True)  # a previous demo's: wiped
    demo = run_demo(output, "--skip-analytics")
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert not (output / "stale").exists()
    report = json.loads((output / "report.json").read_text())
    assert report["arguments"]["scenario"] == "chaos" and report["outcome"]["finished"] is True
    assert report["violations"] == []
    assert list((output / "data" / "__cluster_metadata-0").glob("*.log"))
    assert list((output / "controller-capture").glob("*.parquet"))
    assert (output / "journal.jsonl").stat().st_size > 0
    assert "stopping the controller (SIGTERM)" in demo.stdout
    assert "invariant check: exit status 0" in demo.stdout
    summary = demo.stdout[demo.stdout.index("demo summary") :]
    for name in ("data", "controller-capture", "report.json", "journal.jsonl", "fleet-capture"):
        assert str(output / name) in summary
    assert "(not written)" not in summary  # check.json too: the checker's --report
    assert f"{output / 'analysis' / 'report.html'}  (skipped: --skip-analytics)" in summary
    # what the analytics step would run: the job over both captures and the journal
    command = analytics_command(DemoPaths(output))
    assert command is not None
    args = analytics_parser().parse_args(command[3:])
    assert command[:3] == [sys.executable, "-m", "analytics"]
    assert args.captures == [str(output / "controller-capture"), str(output / "fleet-capture")]
    assert (args.out, args.journal) == (str(output / "analysis"), [output / "journal.jsonl"])


@pytest.mark.slow
def test_a_short_demo_on_a_quorum(tmp_path: Path) -> None:
    """`make demo QUORUM=3`: the fleet starts a quorum of three, attacks it in its chaos scenario,
    and the demo checks the three logs (analytics skipped: `test_a_short_demo_end_to_end` runs it)."""
    output = tmp_path / "demo-output"
    demo = run_demo(output, "--quorum", "3", "--skip-analytics")
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert [path.name for path in sorted((output / "quorum").glob("node-*")) if path.is_dir()] == [
        "node-1",
        "node-2",
        "node-3",
    ]
    check = json.loads((output / "check.json").read_text())
    assert check["ok"] and len(check["nodes"]) == 3, check
    assert "quorum node 1" in demo.stdout and "invariant check: exit status 0" in demo.stdout
