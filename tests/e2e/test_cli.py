"""The daemon's command line: bad arguments, unusable data dirs, JSON logs, idle connections."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .daemon_process import ROOT, DaemonProcess
from .kio_client import KioClient


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--listen", "nowhere", "--data-dir", "x"),
        ("--listen", "127.0.0.1:70000", "--data-dir", "x"),
        ("--session-timeout-ms", "-5", "--data-dir", "x"),
        ("--log-format", "xml", "--data-dir", "x"),
        ("--no-such-flag",),
        (),  # no --data-dir
    ],
)
def test_bad_arguments_exit_2_with_one_line(args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_memory_budget_below_the_largest_frame_exits_2_naming_both_flags(tmp_path: Path) -> None:
    result = run("--data-dir", str(tmp_path / "x"), "--max-frame-bytes", "1000", "--max-queued-bytes", "999")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "--max-queued-bytes 999" in line and "--max-frame-bytes 1000" in line
    assert not (tmp_path / "x").exists(), "refused before anything was touched"


def test_an_unusable_data_dir_exits_1_naming_the_problem(tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    result = run("--data-dir", str(a_file), "--listen", "127.0.0.1:0")
    assert result.returncode == 1
    assert "not-a-dir" in result.stderr and "not a directory" in result.stderr


def test_a_cluster_id_mismatch_exits_1(tmp_path: Path) -> None:
    DaemonProcess(tmp_path / "data", "--cluster-id", "first-cluster-id-0000").start().stop()
    result = run(
        "--data-dir", str(tmp_path / "data"), "--cluster-id", "other-cluster-id-0000", "--listen", "127.0.0.1:0"
    )
    assert result.returncode == 1
    assert "first-cluster-id-0000" in result.stderr and "other-cluster-id-0000" in result.stderr


@pytest.mark.parametrize("flag", ["--listen", "--metrics-listen"])
def test_a_port_in_use_exits_1_with_one_line_naming_the_flag_and_address(tmp_path: Path, flag: str) -> None:
    """Another process holds the port: the operator gets one line (no traceback) and exit 1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        other = {"--listen": "--metrics-listen", "--metrics-listen": "--listen"}[flag]
        result = run("--data-dir", str(tmp_path / "data"), flag, address, other, "127.0.0.1:0")
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if "fencer-controller:" in line]
    assert line == f"fencer-controller: cannot listen on {address} ({flag}): Address already in use"
    assert "Traceback" not in result.stderr


def test_a_corrupt_batch_mid_log_refuses_to_start_until_repair_log_truncates_there(tmp_path: Path) -> None:
    """Troubleshooting's corrupt-log row, as an operator meets it: three starts write three batches
    (each a LeaderChange); a flipped byte in the middle one is not a torn tail, so the daemon refuses
    (exit 1, naming the segment, the offset and --repair-log) and touches nothing; --repair-log cuts
    the log there and starts."""
    data = tmp_path / "data"
    for _ in range(3):
        DaemonProcess(data).start().stop()
    (segment,) = (data / "__cluster_metadata-0").glob("*.log")
    damaged = bytearray(segment.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    segment.write_bytes(damaged)
    refused = run("--data-dir", str(data), "--listen", "127.0.0.1:0")
    assert refused.returncode == 1
    (line,) = [line for line in refused.stderr.splitlines() if line.startswith("fencer-controller:")]
    assert str(segment) in line and "(offset 1)" in line and "--repair-log" in line, line
    assert segment.read_bytes() == damaged
    repaired = DaemonProcess(data, "--repair-log").start()
    assert repaired.stop() == 0
    assert "repaired" in repaired.stderr()
    assert len(segment.read_bytes()) < len(damaged)


def test_json_logs_and_idle_connections_are_closed(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "data", "--log-format", "json", "--idle-timeout-ms", "300").start()
    try:
        with KioClient(daemon.port) as client:
            started = time.monotonic()
            assert client.closed_by_peer(timeout=5)
            assert 0.25 < time.monotonic() - started < 4
    finally:
        assert daemon.stop() == 0
    lines = [json.loads(line) for line in daemon.stderr().splitlines() if line.strip()]
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    assert any("idle" in line["message"] for line in lines)


def test_a_quorum_of_several_voters_without_client_certificates_needs_the_operators_word(tmp_path: Path) -> None:
    """Without client certificates anyone who reaches a voter's listener can act as a voter:
    refused (exit 2, one line naming the flag) unless --allow-unauthenticated-voters says so."""
    voters = "1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093"
    args = ("--data-dir", str(tmp_path / "x"), "--listen", "127.0.0.1:19093", "--controller-quorum-voters", voters)
    result = run(*args)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "client certificates" in line and "--allow-unauthenticated-voters" in line
    assert not (tmp_path / "x").exists()  # refused before anything was formatted
