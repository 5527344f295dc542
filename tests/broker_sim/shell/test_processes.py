"""`--processes K`: slices of broker ids, merged stats and journals, and a parent that survives its
workers (a killed worker is reported, a signal stops them all, nothing is left running)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from broker_sim.journal import Fenced, JournalWriter, RunEnded, RunStarted, ShutdownTracked, read_journal
from broker_sim.shell.fleet import FleetConfig
from broker_sim.shell.processes import broker_slices, merge_journals, merge_snapshots, worker_configs
from broker_sim.stats import FleetStats
from tests.e2e.daemon_process import DaemonProcess

from ..fleet_command import daemon, run_fleet_command, start_fleet_command
from ..test_cli import first_line

__all__ = ["daemon"]


def test_brokers_are_split_in_contiguous_slices() -> None:
    assert broker_slices(10, 3) == [(0, 4), (4, 3), (7, 3)]
    assert broker_slices(3, 3) == [(0, 1), (1, 1), (2, 1)]
    assert broker_slices(5, 1) == [(0, 5)]


def test_each_process_gets_its_ids_its_journal_and_its_capture_dir(tmp_path: Path) -> None:
    config = FleetConfig(brokers=5, first_broker_id=100, capture_dir=tmp_path / "cap", journal_path=tmp_path / "j")
    configs = worker_configs(config, 2)
    assert [(c.first_broker_id, c.brokers, c.create_topics) for c in configs] == [(100, 3, True), (103, 2, False)]
    assert [c.journal_path for c in configs] == [tmp_path / "j.process-0", tmp_path / "j.process-1"]
    assert [c.capture_dir for c in configs] == [tmp_path / "cap" / "process=0", tmp_path / "cap" / "process=1"]
    assert all(
        replace(c, first_broker_id=100, brokers=5, create_topics=True)
        == replace(config, journal_path=c.journal_path, capture_dir=c.capture_dir)
        for c in configs
    )  # everything else is the run's
    quiet = worker_configs(replace(config, capture_dir=None, journal_path=None, create_topics=False), 2)
    assert [(c.capture_dir, c.journal_path, c.create_topics) for c in quiet] == [(None, None, False)] * 2


def test_the_workers_snapshots_merge_into_one_set_of_figures() -> None:
    first, second = FleetStats(), FleetStats()
    first.brokers_by_state.update({"unfenced": 3})
    second.brokers_by_state.update({"unfenced": 1, "fenced": 1})
    first.request("AlterPartition", 2.0, None)
    second.request("AlterPartition", 4.0, "FENCED_LEADER_EPOCH")
    second.stale_replays_sent, second.stale_replays_rejected = 2, 2
    second.violations.append("broker 4: stale replay accepted")
    merged = merge_snapshots([first.snapshot(), second.snapshot()])
    assert merged.brokers_by_state == {"unfenced": 4, "fenced": 1}
    assert merged.requests_by_api == {"AlterPartition": 2}
    assert merged.errors_by_code == {"AlterPartition:FENCED_LEADER_EPOCH": 1}
    assert sorted(merged.latencies_ms["AlterPartition"]) == [2.0, 4.0]
    assert (merged.stale_replays_sent, merged.stale_replays_rejected) == (2, 2)
    assert merged.violations == ["broker 4: stale replay accepted"]


def test_journals_merge_by_time_keeping_each_process_order(tmp_path: Path) -> None:
    parts = [tmp_path / "j.process-0", tmp_path / "j.process-1"]
    first = [RunStarted(10, 1, "chaos", 2, 0, 2000, 9000, 30000), Fenced(30, 0, 5, True, 9.0), RunEnded(50, True)]
    second = [
        RunStarted(20, 1, "chaos", 2, 2, 2000, 9000, 30000),
        ShutdownTracked(3, 8, "heartbeat", started_wall_ns=25, finished_wall_ns=40, attempts=2),
        RunEnded(60, True),
    ]
    for path, entries in zip(parts, (first, second), strict=True):
        writer = JournalWriter(path)
        writer.write_all(entries)
        writer.close()
    with open(parts[1], "a") as torn:
        torn.write('{"kind":"end","wall')  # a worker killed mid-line
    assert merge_journals([*parts, tmp_path / "missing"], tmp_path / "j") == 6
    merged = list(read_journal(tmp_path / "j"))
    assert merged == [first[0], second[0], first[1], second[1], first[2], second[2]]


def test_a_run_over_two_processes_merges_their_results(daemon: DaemonProcess, tmp_path: Path) -> None:
    report_path = tmp_path / "run.json"
    (tmp_path / "run.journal.jsonl.process-1").write_text('{"kind":"end","wall_ns":1,"finished":false}\n')  # stale
    arguments = ["--controller", f"127.0.0.1:{daemon.port}", "--brokers", "5", "--replication-factor", "2"]
    run = run_fleet_command("run", *arguments, "--processes", "2", "--duration", "3", "--report", str(report_path))
    assert run.returncode == 0, run.stderr + run.stdout
    report = json.loads(report_path.read_text())
    processes = report["outcome"]["processes"]
    assert [(p["first_broker_id"], p["brokers"], p["exit_code"], p["failure"]) for p in processes] == [
        (0, 3, 0, None),
        (3, 2, 0, None),
    ]
    assert sum(report["stats"]["brokers_by_state"].values()) == 5
    starts = [entry for entry in read_journal(tmp_path / "run.journal.jsonl") if isinstance(entry, RunStarted)]
    assert sorted((entry.first_broker_id, entry.brokers) for entry in starts) == [(0, 3), (3, 2)]
    assert RunEnded(1, finished=False) not in read_journal(tmp_path / "run.journal.jsonl")  # a crashed run's part
    assert not list(tmp_path.glob("run.journal.jsonl.process-*"))  # merged, then removed


@pytest.mark.slow
def test_a_killed_worker_is_reported_and_the_run_ends(daemon: DaemonProcess, tmp_path: Path) -> None:
    report_path = tmp_path / "run.json"
    arguments = ["--controller", f"127.0.0.1:{daemon.port}", "--brokers", "4", "--processes", "2"]
    fleet = start_fleet_command("run", *arguments, "--duration", "8", "--report", str(report_path))
    assert first_line(fleet).startswith("fleet: brokers 0-3 over 2 processes")
    workers = wait_for_workers(fleet.pid, 2)
    os.kill(workers[1], signal.SIGKILL)
    out, err = fleet.communicate(timeout=120)
    assert fleet.returncode == 1, err
    report = json.loads(report_path.read_text())
    failures = report["outcome"]["failures"]
    assert len(failures) == 1
    assert re.match(r"fleet process [01] \(brokers (0-1|2-3)\) died with exit status -9;", failures[0])
    assert failures[0] in out
    assert report["outcome"]["finished"] is False


def test_sigterm_reaches_every_worker_and_none_is_left(daemon: DaemonProcess, tmp_path: Path) -> None:
    report_path = tmp_path / "run.json"
    arguments = ["--controller", f"127.0.0.1:{daemon.port}", "--brokers", "4", "--processes", "2"]
    fleet = start_fleet_command("run", *arguments, "--duration", "120", "--report", str(report_path))
    first_line(fleet)
    workers = wait_for_workers(fleet.pid, 2)
    fleet.send_signal(signal.SIGTERM)
    _out, err = fleet.communicate(timeout=120)
    assert fleet.returncode == 130, err
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    outcome = json.loads(report_path.read_text())["outcome"]
    assert outcome["interrupted"] is True and outcome["failures"] == []
    # each stopped on the signal: through its fleet (0), or before its fleet started (-SIGTERM)
    assert all(p["exit_code"] in (0, -signal.SIGTERM) for p in outcome["processes"])


def wait_for_workers(parent: int, count: int, timeout: float = 60.0) -> list[int]:
    """The pids of the parent's fleet processes (multiprocessing's spawned children), once all are up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        workers = [int(pid) for pid in children if b"spawn_main" in _cmdline(int(pid))]
        if len(workers) == count:
            return sorted(workers)
        time.sleep(0.05)
    raise AssertionError(f"{count} fleet processes did not start in {timeout:g}s")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
