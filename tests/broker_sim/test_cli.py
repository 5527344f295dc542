"""The fleet's command line: bad arguments and an unreachable controller exit 2 with one line; a run
writes its report and journal; a signal stops it with 130; `--data-dir` runs the final check."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from broker_sim.cli import main, parse_run, run_command
from broker_sim.journal import RunEnded, RunStarted, read_journal
from tests.e2e.daemon_process import ROOT, DaemonProcess, free_port

from .fleet_command import daemon, run_fleet_command, start_fleet_command

__all__ = ["daemon"]  # the fixture, imported for the tests below

PROG = "python -m broker_sim run"


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["--brokers", "-1"], "argument --brokers: expected a positive integer, got '-1'"),
        (["--brokers", "0"], "argument --brokers: expected a positive integer"),
        (["--topics", "-2"], "argument --topics: expected a non-negative integer"),
        (["--partitions", "0"], "argument --partitions: expected a positive integer"),
        (["--first-broker-id", "-1"], "argument --first-broker-id: expected a non-negative integer"),
        (["--replication-factor", "4"], "--replication-factor 4 exceeds --brokers 3"),
        (["--brokers", "5", "--processes", "6"], "--processes 6 exceeds --brokers 5"),
        (["--processes", "0"], "argument --processes: expected a positive integer"),
        (["--controller", "localhost"], "argument --controller: expected HOST:PORT, got 'localhost'"),
        (["--controller", "localhost:0"], "argument --controller: expected HOST:PORT"),
        (["--controller", ":9093"], "argument --controller: expected HOST:PORT"),
        (["--controller", "h:99999"], "argument --controller: expected HOST:PORT"),
        (["--controller", "a:9093,b"], "argument --controller: expected HOST:PORT, got 'b'"),
        (["--controller", "a:9093,"], "argument --controller: expected HOST:PORT, got ''"),
        (["--controller", "a:1,b:2,a:1"], "argument --controller: a:1 is listed twice in 'a:1,b:2,a:1'"),
        (["--scenario", "meltdown"], "argument --scenario: invalid choice: 'meltdown'"),
        (["--duration", "0"], "argument --duration: expected a positive number of seconds"),
        (["--duration", "-5"], "argument --duration: expected a positive number of seconds"),
        (["--duration", "nan"], "argument --duration: expected a positive number of seconds"),
        (["--heartbeat-ms", "9000"], "--heartbeat-ms 9000 must be below --session-timeout-ms 9000"),
        (["--first-broker-id", "2147483647", "--brokers", "3", "--replication-factor", "1"], "broker ids would pass"),
        (["--data-dir", "/nonexistent/fencer"], "--data-dir /nonexistent/fencer is not a directory"),
        (["--report", "/"], "--report / is a directory"),
        (["--brokers"], "argument --brokers: expected one argument"),
        (["--no-such-option"], "unrecognized arguments: --no-such-option"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    arguments: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_command(arguments, PROG) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"{PROG}: error: ")
    assert complaint in err


def test_bad_arguments_through_the_module_and_the_console_script() -> None:
    module = run_fleet_command("run", "--brokers", "-1", timeout=60)
    assert (module.returncode, module.stdout) == (2, "")
    assert module.stderr == f"{PROG}: error: argument --brokers: expected a positive integer, got '-1'\n"
    script = "import sys; sys.argv = ['fencer-fleet', '--scenario', 'x']; from broker_sim.cli import console; console()"
    console = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert console.returncode == 2 and console.stderr.startswith("fencer-fleet: error: argument --scenario")
    assert console.stderr.count("\n") == 1


def test_the_console_script_is_declared() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["fencer-fleet"] == "broker_sim.cli:console"


@pytest.mark.parametrize("arguments", [[], ["launch"]])
def test_a_missing_or_unknown_command_exits_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected a command, run, check or sim" in err


def test_controller_takes_one_address_or_a_list_in_the_order_to_try_them() -> None:
    one = parse_run(["--controller", "10.0.0.1:9093"], PROG)
    assert one.config.controllers == (("10.0.0.1", 9093),) and one.config.other_controllers == ()
    assert one.arguments["controller"] == "10.0.0.1:9093"
    assert parse_run([], PROG).config.controllers == (("127.0.0.1", 9093),)
    quorum = parse_run(["--controller", "c1:9093,c2:9094,[::1]:9095", "--processes", "2"], PROG)
    assert quorum.config.controllers == (("c1", 9093), ("c2", 9094), ("::1", 9095))
    assert quorum.arguments["controller"] == "c1:9093,c2:9094,::1:9095"


def test_the_journal_goes_beside_the_report_else_the_capture_else_a_temporary_file(tmp_path: Path) -> None:
    beside = parse_run(["--report", str(tmp_path / "run.json"), "--capture-dir", str(tmp_path / "c")], PROG)
    assert (beside.config.journal_path, beside.journal_is_temporary) == (tmp_path / "run.journal.jsonl", False)
    captured = parse_run(["--capture-dir", str(tmp_path / "c")], PROG)
    assert captured.config.journal_path == tmp_path / "c" / "journal.jsonl"
    explicit = parse_run(["--journal", str(tmp_path / "j"), "--report", str(tmp_path / "r.json")], PROG)
    assert explicit.config.journal_path == tmp_path / "j"
    checked = parse_run(["--data-dir", str(tmp_path)], PROG)
    assert checked.journal_is_temporary and checked.config.journal_path is not None
    assert not checked.config.journal_path.exists()  # made by the run, not by parsing
    assert parse_run([], PROG).config.journal_path is None


def test_an_unreachable_controller_exits_2_with_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    report = tmp_path / "report.json"
    run = run_fleet_command("run", "--controller", f"127.0.0.1:{port}", "--duration", "5", "--report", str(report))
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith(f"{PROG}: error: ") and f"127.0.0.1:{port}" in run.stderr
    assert "cannot reach the controller" in run.stderr
    outcome = json.loads(report.read_text())["outcome"]
    assert outcome["exit_status"] == 2 and f"127.0.0.1:{port}" in outcome["unreachable"]
    assert outcome["finished"] is False


def test_a_run_writes_its_report_and_journal(daemon: DaemonProcess, tmp_path: Path) -> None:
    report_path = tmp_path / "out" / "run.json"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run.journal.jsonl").write_text('{"kind":"end","wall_ns":1,"finished":false}\n')  # old run
    arguments = ["--controller", f"127.0.0.1:{daemon.port}", "--duration", "3", "--seed", "7"]
    run = run_fleet_command("run", *arguments, "--report", str(report_path), "--capture-dir", str(tmp_path / "cap"))
    assert run.returncode == 0, run.stderr + run.stdout
    report = json.loads(report_path.read_text())
    assert report["arguments"]["seed"] == 7 and report["arguments"]["controller"] == f"127.0.0.1:{daemon.port}"
    assert report["arguments"]["scenario"] == "steady" and report["arguments"]["duration"] == 3.0
    assert report["outcome"] | {"elapsed_s": 0} == {
        "exit_status": 0,
        "finished": True,
        "unreachable": None,
        "interrupted": False,
        "failures": [],
        "elapsed_s": 0,
        "processes": [],
    }
    assert report["violations"] == [] and report["check"] is None
    requests = report["stats"]["requests_by_api"]
    assert requests and set(report["summary"]["requests"]) == set(requests)
    assert all(row["count"] == requests[api] for api, row in report["summary"]["requests"].items())
    journal = tmp_path / "out" / "run.journal.jsonl"
    assert report["paths"] == {
        "report": str(report_path),
        "journal": str(journal),
        "capture_dir": str(tmp_path / "cap"),
        "data_dir": None,
    }
    entries = list(read_journal(journal))
    assert isinstance(entries[0], RunStarted) and entries[0].seed == 7  # the old run's entry is gone
    assert entries[-1] == RunEnded(entries[-1].wall_ns, finished=True)
    # plain output (stdout is a pipe): the summary, the verdict and the paths
    assert "requests by API" in run.stdout and "exit status 0" in run.stdout
    assert f"report: {report_path}" in run.stdout


def test_sigterm_stops_the_run_and_exits_130(daemon: DaemonProcess, tmp_path: Path) -> None:
    report_path = tmp_path / "run.json"
    fleet = start_fleet_command(
        "run", "--controller", f"127.0.0.1:{daemon.port}", "--duration", "60", "--report", str(report_path)
    )
    assert first_line(fleet).startswith("fleet: brokers 0-2 against")  # printed once signals are handled
    fleet.send_signal(signal.SIGTERM)
    out, err = fleet.communicate(timeout=60)
    assert fleet.returncode == 130, err
    report = json.loads(report_path.read_text())
    assert report["outcome"]["interrupted"] is True and report["outcome"]["finished"] is False
    assert "run interrupted" in out


def test_the_final_check_runs_on_the_data_dir(daemon: DaemonProcess, tmp_path: Path) -> None:
    """Needs the checker (`broker_sim.check`, merged from its own branch)."""
    report_path = tmp_path / "run.json"
    arguments = ["--controller", f"127.0.0.1:{daemon.port}", "--duration", "3", "--data-dir", str(daemon.data_dir)]
    run = run_fleet_command("run", *arguments, "--report", str(report_path))
    assert run.returncode == 0, run.stderr + run.stdout
    check = json.loads(report_path.read_text())["check"]
    assert check == {
        "data_dir": str(daemon.data_dir),
        "journal": str(tmp_path / "run.journal.jsonl"),
        "violations": [],
        "problems": [],
    }
    alone = run_fleet_command("check", str(daemon.data_dir), "--journal", str(tmp_path / "run.journal.jsonl"))
    assert alone.returncode == 0, alone.stderr + alone.stdout


def first_line(process: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The first line the process prints (without blocking the test for ever)."""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], timeout)
    assert readable, f"nothing printed in {timeout:g}s"
    return process.stdout.readline()
