"""The fsync-order check (tests/stress/fsync_order.py): the real daemon passes it, a copy whose log
is never fsync'd fails it, and the trace reader gets strace's interleaved threads right."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fsync_order import StraceMissing, check_trace, require_strace, traced_run

SEGMENT = "/data/__cluster_metadata-0/00000000000000000000.log"
ANSWER = '11 write(7<TCP:[127.0.0.1:9093->127.0.0.1:40000]>, "\\0\\0\\0\\6", 10) = 10'
LOG_WRITE = f'10 write(3<{SEGMENT}>, "\\0\\0", 91) = 91'


def test_the_daemon_answers_only_after_its_log_is_fsynced(tmp_path: Path) -> None:
    report = traced_run(tmp_path / "data", seconds=3)
    assert report.ok, report.format()
    assert report.answers > 300 and report.log_fsyncs > 100, report.format()
    assert report.load["create"] and report.load["delete"] and report.load["register"], report.format()


def test_a_daemon_without_log_fsync_is_caught(tmp_path: Path) -> None:
    report = traced_run(tmp_path / "data", seconds=2, module="tests.stress.no_fsync_daemon")
    assert not report.ok
    assert report.log_fsyncs == 0 and report.log_writes > 100
    assert len(report.violations) == report.answers > 100  # every answer after the first log write
    assert "violation 1: answer" in report.format()


def test_a_missing_strace_fails_and_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StraceMissing, match="install it"):
        require_strace()
    with pytest.raises(StraceMissing):
        traced_run(tmp_path / "data", seconds=1)
    assert issubclass(StraceMissing, AssertionError)  # a failure, never a skip


def test_an_answer_after_the_fsync_returned_passes() -> None:
    lines = [LOG_WRITE, f"10 fsync(3<{SEGMENT}>)  = 0", ANSWER]
    report = check_trace(lines, 9093)
    assert (report.answers, report.log_writes, report.log_fsyncs, report.violations) == (1, 1, 1, [])


def test_an_answer_while_the_fsync_is_unfinished_is_a_violation() -> None:
    lines = [LOG_WRITE, f"10 fsync(3<{SEGMENT}> <unfinished ...>", ANSWER, "10 <... fsync resumed>) = 0", ANSWER]
    report = check_trace(lines, 9093)
    assert report.violations == [(ANSWER, 1, LOG_WRITE)]
    assert report.answers == 2 and report.log_fsyncs == 1


def test_a_fsync_covers_only_the_writes_that_came_before_it() -> None:
    late_write = f'12 write(3<{SEGMENT}>, "\\0\\1", 77 <unfinished ...>'
    lines = [LOG_WRITE, f"10 fsync(3<{SEGMENT}> <unfinished ...>", late_write, "10 <... fsync resumed>) = 0", ANSWER]
    assert check_trace(lines, 9093).violations == [(ANSWER, 1, late_write)]


def test_a_failed_fsync_covers_nothing() -> None:
    lines = [LOG_WRITE, f"10 fsync(3<{SEGMENT}>) = -1 EIO (Input/output error)", ANSWER]
    assert len(check_trace(lines, 9093).violations) == 1


def test_only_sockets_accepted_on_the_listener_carry_answers() -> None:
    outbound = '11 write(8<TCP:[127.0.0.1:5555->127.0.0.1:9093]>, "x", 1) = 1'  # to a broker listening on 9093
    ipv6 = '11 sendto(9<TCPv6:[[::1]:9093->[::1]:40001]>, "x", 1, 0, NULL, 0 <unfinished ...>'
    other_file = '10 write(4</data/__cluster_metadata-0/00000000000000000000-0000000001.checkpoint.part>, "x", 1) = 1'
    report = check_trace([LOG_WRITE, other_file, outbound, ipv6], 9093)
    assert (report.answers, report.log_writes) == (1, 1)
    assert report.violations == [(ipv6, 1, LOG_WRITE)]
