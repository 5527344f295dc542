"""No answer leaves before the fsync of its records: the daemon's syscalls under load, checked.

Run on demand: `.venv/bin/python tests/stress/fsync_order.py --seconds 10` (`make fsync-check`;
`--no-fsync` runs the copy whose log is never fsync'd, which must fail). The suite runs both
for a few seconds (tests/stress/test_fsync_order.py). Needs strace: a missing strace is a
failure that says to install it, never a skip.

SIGKILL cannot see a missing fsync (the page cache outlives the process), so this looks at the
order of syscalls instead. The real daemon (`python -m controller`, or any module taking its
arguments) runs under `strace -f -yy` (every thread; each fd printed with its file path or its
TCP endpoints) with `--snapshot-bytes 65536`, while load.py's mixed load (registrations,
heartbeats, topic creation and deletion, ISR changes, over four connections) runs for N
seconds; then the load stops, the daemon gets SIGTERM and the trace is read.

The daemon commits one group of requests at a time: write and fsync of the group's batches in
a worker thread (`MetadataLog._write_active`), then, back on the event loop, every answer of
the group; the next group's write starts only after that. So the rule checked is:

    When the daemon writes to a connection accepted on its Kafka listener (write, writev,
    sendto, sendmsg or sendmmsg on a TCP socket whose local port is the listener's), every
    byte it wrote before to a segment of the metadata log (`__cluster_metadata-0/*.log`:
    write, writev, pwrite64, pwritev, pwritev2) is covered by an fsync or fdatasync of that
    segment that entered after the write and returned 0 before the answer.

Ordering comes from strace: a syscall that another thread interrupts shows as `<unfinished ...>`
and `<... resumed>`; a log write counts from its entry, an fsync from its return, an answer from
its entry. Across threads strace's order is causal: the answer is sent only after the worker
thread returned from fsync and woke the event loop, and strace prints that return before it lets
the thread go on.

It is stricter than "after its own records": no answer at all may leave while any log bytes
are unsynced, which the daemon meets by design (answers only between commits). The only
answers sent outside a commit are KIP-511's fallback and the rest of an answer a slow peer did
not read; the load sends neither.

What it does not cover:
- an answer sent before its records were even written (a trace cannot tie an answer to its
  records; kill9.py sees that if a kill lands in between);
- that fsync reaches the platter (a disk cache that lies), and the directory fsyncs that make
  a new segment's or snapshot's name durable (not traced);
- writes through mmap, io_uring, copy_file_range or sendfile, and syncfs/sync (the daemon uses
  none; a log write the trace cannot see leaves the check with nothing to prove, so a report
  with no log write or no answer fails);
- the HTTP listener and the control channel to brokers (not answers to Kafka requests).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.daemon_process import DaemonProcess
from tests.stress.load import API_NAMES, Load

SNAPSHOT_BYTES = 64 * 1024
LOG_WRITES = ("write", "writev", "pwrite64", "pwritev", "pwritev2")
SOCKET_WRITES = ("write", "writev", "sendto", "sendmsg", "sendmmsg")
SYNCS = ("fsync", "fdatasync")
TRACED = sorted({*LOG_WRITES, *SOCKET_WRITES, *SYNCS})
STRACE_FLAGS = ("-f", "-qq", "-yy", "--seccomp-bpf", "-e", "signal=none", "-e", "trace=" + ",".join(TRACED))

# `PID call(FD<target>, ...` (the entry, complete or `<unfinished ...>`), and `PID <... call resumed>...`
_ENTRY = re.compile(r"^(?:(?P<pid>\d+) +)?(?P<call>\w+)\(\d+<(?P<target>.*?)>(?:, |\)| <unfinished)")
_RESUMED = re.compile(r"^(?:(?P<pid>\d+) +)?<\.\.\. (?P<call>\w+) resumed>")
_RESULT = re.compile(r"\) += (-?\d+)")
_SEGMENT = re.compile(r"/__cluster_metadata-0/\d+\.log$")
_TCP = re.compile(r"^TCP(?:v6)?:\[.*?:(\d+)->")


class StraceMissing(AssertionError):
    """strace is not installed: the check cannot run (and must not pass)."""


@dataclass
class TraceReport:
    listener_port: int
    answers: int = 0
    log_writes: int = 0
    log_fsyncs: int = 0
    #: (the answer's syscall line, how many log writes were not yet fsync'd, the latest of them)
    violations: list[tuple[str, int, str]] = field(default_factory=list)
    load: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return self.answers > 0 and self.log_writes > 0 and not self.violations

    def format(self) -> str:
        lines = [
            f"{self.answers} answers on port {self.listener_port} checked; {self.log_writes} log writes, "
            f"{self.log_fsyncs} log fsyncs seen; {len(self.violations)} violations",
        ]
        if self.load:
            lines.append("load answered: " + ", ".join(f"{API_NAMES[k]} {n}" for k, n in sorted(self.load.items())))
        if not self.answers or not self.log_writes:
            lines.append("NOTHING PROVED: the trace holds no answer or no log write")
        for number, (answer, count, write) in enumerate(self.violations, 1):
            lines.append(f"violation {number}: answer\n    {answer}\n  sent while {count} log writes were not fsync'd:")
            lines.append(f"    {write}" + ("\n    ..." if count > 1 else ""))
        return "\n".join(lines)


def check_trace(lines: Iterable[str], listener_port: int) -> TraceReport:
    """Check strace output (`-f -yy`) against the rule of the module docstring."""
    report = TraceReport(listener_port)
    unsynced: dict[str, list[tuple[int, str]]] = {}  # segment -> (sequence, line) of writes not yet covered
    syncing: dict[str | None, tuple[str, int]] = {}  # pid -> (segment, sequence at entry) of an unfinished fsync
    for sequence, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if resumed := _RESUMED.match(line):
            started = syncing.pop(resumed["pid"], None) if resumed["call"] in SYNCS else None
            if started is not None and _succeeded(line):
                _synced(report, unsynced, *started)
            continue
        entry = _ENTRY.match(line)
        if entry is None:
            continue
        call, target = entry["call"], entry["target"]
        if _SEGMENT.search(target):
            if call in LOG_WRITES:
                report.log_writes += 1
                unsynced.setdefault(target, []).append((sequence, line))
            elif call in SYNCS and line.endswith("<unfinished ...>"):
                syncing[entry["pid"]] = (target, sequence)
            elif call in SYNCS and _succeeded(line):
                _synced(report, unsynced, target, sequence)
        elif call in SOCKET_WRITES and (tcp := _TCP.match(target)) and int(tcp[1]) == listener_port:
            report.answers += 1
            pending = [write for writes in unsynced.values() for write in writes]
            if pending:
                report.violations.append((line, len(pending), max(pending)[1]))
    return report


def _succeeded(line: str) -> bool:
    result = _RESULT.search(line)
    return result is not None and result[1] == "0"


def _synced(report: TraceReport, unsynced: dict[str, list[tuple[int, str]]], segment: str, entered: int) -> None:
    """An fsync of `segment` that entered at `entered` returned 0: it covers the writes before it."""
    report.log_fsyncs += 1
    unsynced[segment] = [write for write in unsynced.get(segment, []) if write[0] > entered]


def require_strace() -> str:
    path = shutil.which("strace")
    if path is None:
        raise StraceMissing(
            "strace is not on PATH: install it (Debian/Ubuntu: apt-get install strace) to run the fsync-order check"
        )
    return path


def traced_run(
    data_dir: Path, seconds: float, seed: int = 1, clients: int = 4, module: str = "controller"
) -> TraceReport:
    """Run `module` (the daemon, or a copy taking its arguments) under strace and load; check the trace."""
    trace = data_dir.parent / f"{data_dir.name}.strace"
    wrapper = (require_strace(), *STRACE_FLAGS, "-o", str(trace))
    args = ("--session-timeout-ms", "600000", "--snapshot-bytes", str(SNAPSHOT_BYTES))
    daemon = DaemonProcess(data_dir, *args, module=module, wrapper=wrapper).start(timeout=60)
    try:
        load = Load(daemon.port, clients, random.Random(seed))
        load.start(daemon.port)
        load.stop.wait(seconds)
        counts = load.halt()
    finally:
        code = stop_traced(daemon)
    if code != 0:
        raise AssertionError(f"the traced daemon exited with status {code}:\n{daemon.stderr()}")
    with trace.open(errors="replace") as lines:
        report = check_trace(lines, daemon.port)
    report.load = counts
    return report


def stop_traced(daemon: DaemonProcess) -> int:
    """SIGTERM the daemon itself (strace's child; strace then exits with its status); return that."""
    assert daemon.process is not None
    strace_pid = daemon.process.pid
    children = Path(f"/proc/{strace_pid}/task/{strace_pid}/children").read_text().split()
    if children:
        os.kill(int(children[0]), signal.SIGTERM)
    try:
        daemon.process.wait(60)
    finally:
        code = daemon.stop()  # closes its files (and ends strace if the daemon did not stop)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="check under strace that no answer leaves before its fsync")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the load runs (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--no-fsync", action="store_true", help="run the copy whose log is never fsync'd")
    args = parser.parse_args(argv)
    module = "tests.stress.no_fsync_daemon" if args.no_fsync else "controller"
    with tempfile.TemporaryDirectory(prefix="fencer-fsync-") as tmp:
        report = traced_run(Path(tmp) / "data", args.seconds, args.seed, args.clients, module)
    print(report.format())
    print("OK: no answer left before the fsync of the log bytes written before it" if report.ok else "FAILED")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
