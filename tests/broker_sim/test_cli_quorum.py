"""The fleet's own quorum on the command line (`--quorum N --quorum-data-dir DIR`): what it refuses
beside it (one line, exit 2, before anything starts), what it plans, and a quorum that cannot start
ending the run as an unreachable controller does (exit 2, one line naming the node's log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from broker_sim.cli import parse_run, run_command
from broker_sim.model.quorum import QuorumTiming

from .fleet_command import run_fleet_command

PROG = "python -m broker_sim run"


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["--scenario", "controller-failover"], "--scenario controller-failover needs --quorum"),
        (["--quorum", "3"], "--quorum needs --quorum-data-dir"),
        (["--quorum-data-dir", "q"], "--quorum-data-dir needs --quorum"),
        (["--quorum", "0", "--quorum-data-dir", "q"], "argument --quorum: expected a positive integer"),
        (["--quorum", "11", "--quorum-data-dir", "q"], "--quorum 11: at most 9 controllers"),
        (["--quorum", "3", "--quorum-data-dir", "q", "--controller", "a:1"], "drop --controller"),
        (["--quorum", "3", "--quorum-data-dir", "q", "--data-dir", "."], "drop --data-dir"),
        (["--quorum", "3", "--quorum-data-dir", "q", "--processes", "2"], "drop --processes"),
        (["--quorum", "3", "--quorum-data-dir", "q", "--claim-broker-ids", "c"], "drop --claim-broker-ids"),
        (["--quorum", "3", "--quorum-data-dir", "q", "--quorum-fetch-timeout-ms", "0"], "expected a positive"),
    ],
)
def test_bad_quorum_arguments_exit_2_with_one_line(
    arguments: list[str], complaint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = [str(tmp_path / arg) if arg in ("q", "c") else arg for arg in arguments]
    assert run_command(arguments, PROG) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(f"{PROG}: error: ")
    assert complaint in err


def test_a_quorum_dir_that_holds_a_node_already_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "node-2").mkdir()
    assert run_command(["--quorum", "3", "--quorum-data-dir", str(tmp_path)], PROG) == 2
    complaint = f"--quorum-data-dir {tmp_path} already holds node-2: give a new or empty directory"
    assert complaint in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert run_command(["--quorum", "3", "--quorum-data-dir", str(tmp_path / "file")], PROG) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_the_quorum_plan_takes_the_runs_session_timeout_seeded_cluster_id_and_timeouts(tmp_path: Path) -> None:
    common = ["--quorum", "5", "--quorum-data-dir", str(tmp_path / "q"), "--session-timeout-ms", "4000"]
    plan = parse_run([*common, "--seed", "3", "--quorum-election-timeout-ms", "500", "--scenario", "chaos"], PROG)
    quorum = plan.quorum
    assert quorum is not None and plan.data_dir is None and plan.arguments["controller"] is None
    assert quorum.nodes == 5 and quorum.session_timeout_ms == 4000
    assert quorum.timing == QuorumTiming(election_timeout_s=0.5, fetch_timeout_s=2.0)
    assert quorum.node_dirs == [tmp_path / "q" / f"node-{node}" for node in range(1, 6)]
    assert quorum.cluster_id == parse_run([*common, "--seed", "3"], PROG).quorum.cluster_id  # type: ignore[union-attr]
    assert quorum.cluster_id != parse_run([*common, "--seed", "4"], PROG).quorum.cluster_id  # type: ignore[union-attr]
    assert (quorum.module, quorum.extra_args) == ("controller", ())
    planted = parse_run([*common, "--controller-module", "m.n", "--controller-args=--bug 'a b'"], PROG).quorum
    assert planted is not None and (planted.module, planted.extra_args) == ("m.n", ("--bug", "a b"))
    assert parse_run([], PROG).quorum is None


def test_a_quorum_that_cannot_start_ends_the_run_with_one_line_and_a_report(tmp_path: Path) -> None:
    report = tmp_path / "run.json"
    run = run_fleet_command(
        "run",
        "--quorum",
        "1",  # one is enough to fail, and the cheapest
        "--quorum-data-dir",
        str(tmp_path / "q"),
        "--controller-module",
        "controller",
        "--controller-args=--no-such-flag",  # `=`: a value that starts with a dash
        "--duration",
        "5",
        "--report",
        str(report),
        timeout=90,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    line = f"{PROG}: error: controller node 1 did not start (see {tmp_path / 'q' / 'node-1.log'}): "
    assert run.stderr.startswith(line) and run.stderr.count("\n") == 1
    assert run.stderr.endswith("python -m controller: error: unrecognized arguments: --no-such-flag\n")
    assert json.loads(report.read_text())["outcome"]["unreachable"] in run.stderr


def test_the_fleets_tls_files_serve_every_node_of_its_quorum(tmp_path: Path) -> None:
    from broker_sim.shell.quorum import Quorum
    from tests.pki import Pki

    pki = Pki(tmp_path / "pki")
    fleet = pki.issue("fleet", "127.0.0.1")
    tls = ["--tls-cert", str(fleet.cert), "--tls-key", str(fleet.key), "--tls-ca", str(pki.ca)]
    plan = parse_run(["--quorum", "3", "--quorum-data-dir", str(tmp_path / "q"), *tls], PROG).quorum
    assert plan is not None and plan.tls is not None
    quorum = Quorum(plan, ports=[11001, 11002, 11003])
    command = quorum.command(2)
    flags = {flag: command[command.index(flag) + 1] for flag in ("--tls-cert", "--tls-key", "--tls-ca")}
    assert flags == {"--tls-cert": str(fleet.cert), "--tls-key": str(fleet.key), "--tls-ca": str(pki.ca)}
    assert all(probe.tls is quorum.client_tls is not None for probe in quorum.probes.values())
    plain = parse_run(["--quorum", "3", "--quorum-data-dir", str(tmp_path / "p")], PROG).quorum
    assert plain is not None and "--tls-cert" not in Quorum(plain, ports=[11001, 11002, 11003]).command(1)
