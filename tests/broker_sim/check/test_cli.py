"""`python -m broker_sim check`: the summary, the JSON report, the exit codes, the journal option."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from broker_sim.check.cli import main
from broker_sim.journal import JournalWriter, PartitionAcked

from .logs import TOPIC_ID, LogBuilder

ROOT = Path(__file__).resolve().parents[3]


def broken_log(tmp_path: Path) -> LogBuilder:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1, 2))
    log.change_broker(3, in_controlled_shutdown=1)
    log.change(0, isr=(1, 2, 3))  # a shutting-down broker admitted
    log.write()
    return log


def test_violations_exit_1_with_a_summary_and_a_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = broken_log(tmp_path)
    journal = tmp_path / "run" / "journal.jsonl"
    writer = JournalWriter(journal)
    acked = PartitionAcked(1, 1, 1, 2, str(TOPIC_ID), 0, [1, 2], [], 1, 0, 9, [1, 2])  # epoch 9: never committed
    writer.write(acked)
    writer.close()
    report = tmp_path / "out" / "report.json"
    assert main([str(log.data_dir), "--journal", str(journal), "--report", str(report)]) == 1
    out = capsys.readouterr().out
    assert "violations: 2 (ack-lost 1, isr-admission 1)" in out
    assert f"[isr-admission] offset {log.next_offset - 1}, t-0 ({TOPIC_ID}), broker 3" in out
    assert out.rstrip().endswith("FAILED")
    data = json.loads(report.read_text())
    assert data["ok"] is False and data["violation_counts"] == {"ack-lost": 1, "isr-admission": 1}
    admission = next(v for v in data["violations"] if v["rule"] == "isr-admission")
    assert admission["offset"] == log.next_offset - 1 and admission["broker"] == 3
    assert any("in_controlled_shutdown=1" in record for record in admission["records"])


def test_python_m_broker_sim_check_runs_the_checker(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.write()
    result = subprocess.run(
        [sys.executable, "-m", "broker_sim", "check", str(log.data_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "OK: no violations" in result.stdout and "records/s" in result.stdout
    broken = broken_log(tmp_path / "broken")
    result = subprocess.run(
        [sys.executable, "-m", "broker_sim", "check", str(broken.data_dir)], cwd=ROOT, capture_output=True, timeout=60
    )
    assert result.returncode == 1
