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

The daemon's writer commits one group of requests at a time (write and fsync of the group's
batches in a worker thread), and replication is pipelined: the next group's write may start
while the previous group's answers leave. So an answer may leave while log bytes are unsynced,
but never while its own records are. The rule checked:

    When the daemon answers a request of the load on its Kafka listener (the first write,
    writev, sendto, sendmsg or sendmmsg of the answer's frame to the connection), the log
    write that holds the records the answer reports, and every log write before it, is
    covered by an fsync or fdatasync of its segment that entered after the write and
    returned 0 before the answer. An answer reporting a record no log write holds (answered
    before its records were even written) is a violation too.

The records an answer reports are found by content: strace prints every byte written (`-xx`),
the log's writes are decoded as record batches and the answers as Kafka responses (the load
records each request's API and version by connection and correlation id). A CreateTopics answer
reports its topic's TopicRecord (by topic id), a DeleteTopics answer its RemoveTopicRecord, an
AlterPartition answer the PartitionChangeRecord that gave the partition the epoch it reports (a
partition's epoch is 0 at its PartitionRecord and one more at each change), a
BrokerRegistration answer the RegisterBrokerRecord at the offset it reports as broker epoch.
Each of these is in one record only, so the tie is exact. A heartbeat of an unfenced broker
reports no record: it is counted, not tied.

Ordering comes from strace: a syscall that another thread interrupts shows as `<unfinished ...>`
and `<... resumed>`; a log write counts from its entry, an fsync from its return, an answer from
its entry. Across threads strace's order is causal: the answer is sent only after the worker
thread returned from fsync and woke the event loop, and strace prints that return before it lets
the thread go on.

What it does not cover:
- answers to requests other than the load's, and answers that report no record (heartbeats,
  ApiVersions): they are counted, not tied;
- that fsync reaches the platter (a disk cache that lies), and the directory fsyncs that make
  a new segment's or snapshot's name durable (not traced);
- writes through mmap, io_uring, copy_file_range or sendfile, and syncfs/sync (the daemon uses
  none; a log write the trace cannot see leaves the check with nothing to prove, so a report
  with no log write or no tied answer fails);
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

from protocol.api_keys import ApiKey
from protocol.records.batch import iter_batches
from protocol.records.metadata import (
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from protocol.records.metadata_value import decode_metadata_value
from protocol.registry import decode_response
from tests.e2e.daemon_process import DaemonProcess
from tests.stress.load import API_NAMES, Load

SNAPSHOT_BYTES = 64 * 1024
LOG_WRITES = ("write", "writev", "pwrite64", "pwritev", "pwritev2")
SOCKET_WRITES = ("write", "writev", "sendto", "sendmsg", "sendmmsg")
SYNCS = ("fsync", "fdatasync")
TRACED = sorted({*LOG_WRITES, *SOCKET_WRITES, *SYNCS})
#: every byte written, in hex (a log write is a whole commit: a few KB under this load)
STRACE_FLAGS = (
    *("-f", "-qq", "-yy", "-xx", "-s", str(1 << 22), "--seccomp-bpf"),
    *("-e", "signal=none", "-e", "trace=" + ",".join(TRACED)),
)

# `PID call(FD<target>, ...` (the entry, complete or `<unfinished ...>`), and `PID <... call resumed>...`
_ENTRY = re.compile(r"^(?:(?P<pid>\d+) +)?(?P<call>\w+)\(\d+<(?P<target>.*?)>(?:, |\)| <unfinished)")
_RESUMED = re.compile(r"^(?:(?P<pid>\d+) +)?<\.\.\. (?P<call>\w+) resumed>")
_RESULT = re.compile(r"\) += (-?\d+)")
_BYTES = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
_HEX = re.compile(r"\\x([0-9a-f]{2})")
_SEGMENT = re.compile(r"/__cluster_metadata-0/\d+\.log$")
_TCP = re.compile(r"^TCP(?:v6)?:\[.*?:(\d+)->.*:(\d+)\]$")

#: what ties an answer to a record: ("topic", id), ("removed", id), ("partition", id, index,
#: partition epoch) or ("broker epoch", offset)
Token = tuple[object, ...]
#: (client port, correlation id) -> (api key, version): the load's requests
Requests = dict[tuple[int, int], tuple[int, int]]


class StraceMissing(AssertionError):
    """strace is not installed: the check cannot run (and must not pass)."""


@dataclass
class TraceReport:
    listener_port: int
    answers: int = 0
    #: answers to the load's requests that report records (the ones the rule checks)
    tied: int = 0
    log_writes: int = 0
    log_fsyncs: int = 0
    #: (the answer's syscall line, what is wrong, the log write it concerns)
    violations: list[tuple[str, str, str]] = field(default_factory=list)
    load: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return self.tied > 0 and self.log_writes > 0 and not self.violations

    def format(self) -> str:
        lines = [
            f"{self.answers} answers on port {self.listener_port}, {self.tied} of them reporting records, checked; "
            f"{self.log_writes} log writes, {self.log_fsyncs} log fsyncs seen; {len(self.violations)} violations",
        ]
        if self.load:
            lines.append("load answered: " + ", ".join(f"{API_NAMES[k]} {n}" for k, n in sorted(self.load.items())))
        if not self.tied or not self.log_writes:
            lines.append("NOTHING PROVED: the trace holds no answer reporting a record, or no log write")
        for number, (answer, problem, write) in enumerate(self.violations, 1):
            lines.append(f"violation {number}: answer\n    {answer[:300]}\n  sent while {problem}:\n    {write[:300]}")
        return "\n".join(lines)


class _Log:
    """The log's writes as the trace shows them: which are not yet fsync'd, which record is where."""

    def __init__(self) -> None:
        self.unsynced: dict[str, list[tuple[int, str]]] = {}  # segment -> (sequence, line) not yet covered
        self.holder: dict[Token, tuple[int, str]] = {}  # token -> the write holding its record
        self._epochs: dict[tuple[object, int], int] = {}  # (topic id, partition) -> partition epoch

    def wrote(self, segment: str, sequence: int, line: str) -> None:
        self.unsynced.setdefault(segment, []).append((sequence, line))
        for token in self._tokens(_written_bytes(line)):
            self.holder[token] = (sequence, line)

    def synced(self, segment: str, entered: int) -> None:
        """An fsync of `segment` that entered at `entered` returned 0: it covers the writes before it."""
        self.unsynced[segment] = [write for write in self.unsynced.get(segment, []) if write[0] > entered]

    def _tokens(self, data: bytes) -> list[Token]:
        tokens: list[Token] = []
        for _, batch in iter_batches(data):
            if batch.is_control:
                continue
            for record in batch.records:
                value, _ = decode_metadata_value(record.value)
                if isinstance(value, RegisterBrokerRecord):
                    tokens.append(("broker epoch", batch.base_offset + record.offset_delta))
                elif isinstance(value, TopicRecord):
                    tokens.append(("topic", value.topic_id))
                elif isinstance(value, RemoveTopicRecord):
                    tokens.append(("removed", value.topic_id))
                elif isinstance(value, PartitionRecord | PartitionChangeRecord):
                    key = (value.topic_id, value.partition_id)
                    epoch = value.partition_epoch if isinstance(value, PartitionRecord) else self._epochs[key] + 1
                    self._epochs[key] = epoch
                    tokens.append(("partition", *key, epoch))
        return tokens


class _Answers:
    """The daemon's answers on its listener, framed per connection and decoded by the load's requests."""

    def __init__(self, requests: Requests) -> None:
        self._requests = requests
        self._streams: dict[str, bytearray] = {}

    def sent(self, connection: str, client_port: int, data: bytes) -> list[list[Token]]:
        """Bytes written to a connection; the tokens of each answer whose frame ends here (an
        answer's frame is written whole, but a partial write leaves the rest to the next)."""
        stream = self._streams.setdefault(connection, bytearray())
        stream += data
        answers = []
        while len(stream) >= 4 and len(stream) >= 4 + (size := int.from_bytes(stream[:4], "big")):
            frame = bytes(stream[4 : 4 + size])
            del stream[: 4 + size]
            answers.append(self._tokens(client_port, frame))
        return answers

    def _tokens(self, client_port: int, frame: bytes) -> list[Token]:
        request = self._requests.get((client_port, int.from_bytes(frame[:4], "big", signed=True)))
        if request is None:
            return []  # not one of the load's requests (the set-up's)
        _, body = decode_response(frame, *request)
        if request[0] == ApiKey.CREATE_TOPICS:
            return [("topic", topic.topic_id) for topic in body.topics]
        if request[0] == ApiKey.DELETE_TOPICS:
            return [("removed", topic.topic_id) for topic in body.responses]
        if request[0] == ApiKey.ALTER_PARTITION:
            return [
                ("partition", topic.topic_id, part.partition_index, part.partition_epoch)
                for topic in body.topics
                for part in topic.partitions
            ]
        if request[0] == ApiKey.BROKER_REGISTRATION:
            return [("broker epoch", body.broker_epoch)]
        return []


def check_trace(lines: Iterable[str], listener_port: int, requests: Requests) -> TraceReport:
    """Check strace output (`-f -yy -xx`) against the rule of the module docstring."""
    report = TraceReport(listener_port)
    log, answers = _Log(), _Answers(requests)
    syncing: dict[str | None, tuple[str, int]] = {}  # pid -> (segment, sequence at entry) of an unfinished fsync
    for sequence, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if resumed := _RESUMED.match(line):
            started = syncing.pop(resumed["pid"], None) if resumed["call"] in SYNCS else None
            if started is not None and _succeeded(line):
                report.log_fsyncs += 1
                log.synced(*started)
            continue
        entry = _ENTRY.match(line)
        if entry is None:
            continue
        call, target = entry["call"], _path(entry["target"])
        if _SEGMENT.search(target):
            if call in LOG_WRITES:
                report.log_writes += 1
                log.wrote(target, sequence, line)
            elif call in SYNCS and line.endswith("<unfinished ...>"):
                syncing[entry["pid"]] = (target, sequence)
            elif call in SYNCS and _succeeded(line):
                report.log_fsyncs += 1
                log.synced(target, sequence)
        elif call in SOCKET_WRITES and (tcp := _TCP.match(target)) and int(tcp[1]) == listener_port:
            data = _written_bytes(line)
            if (result := _RESULT.search(line)) is not None and int(result[1]) >= 0:
                data = data[: int(result[1])]  # a partial write: the rest comes in the next one
            for tokens in answers.sent(target, int(tcp[2]), data):
                report.answers += 1
                if tokens:
                    report.tied += 1
                    _check_answer(report, log, tokens, line)
    return report


def _check_answer(report: TraceReport, log: _Log, tokens: list[Token], line: str) -> None:
    holders = [log.holder.get(token) for token in tokens]
    if None in holders:
        missing = tokens[holders.index(None)]
        report.violations.append((line, f"no log write holds its record {missing}", "(none)"))
        return
    last = max(holder[0] for holder in holders if holder is not None)
    pending = sorted(write for writes in log.unsynced.values() for write in writes if write[0] <= last)
    if pending:
        problem = f"{len(pending)} log writes up to the one holding its records were not fsync'd"
        report.violations.append((line, problem, pending[-1][1]))


def _written_bytes(line: str) -> bytes:
    """The bytes a write-like call's entry line shows (every buffer of a writev or sendmsg), in order."""
    return bytes.fromhex("".join(_BYTES.findall(line)).replace("\\x", ""))


def _path(target: str) -> str:
    """A file's path as `-yy` prints it: with `-xx`, in hex escapes."""
    return _HEX.sub(lambda escape: chr(int(escape[1], 16)), target)


def _succeeded(line: str) -> bool:
    result = _RESULT.search(line)
    return result is not None and result[1] == "0"


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
        report = check_trace(lines, daemon.port, load.requests)
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
    print("OK: no answer left before the fsync of its records" if report.ok else "FAILED")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
