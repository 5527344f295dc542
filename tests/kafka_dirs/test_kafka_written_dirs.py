"""fencer adopts the KRaft data dirs real Kafka brokers wrote (../shared/fixtures/kafka, read in place).

The three dirs Apache Kafka 3.6.1 and 3.9.0 wrote go through `make check-kafka-dirs` (adopt.py,
as test_adopt.py runs it on its hand-written dir) in one run: every check must pass on each. The
facts held against its output (brokers, topics, partitions, the log's end offset, the snapshot
inside one log) are the fixtures' README's, not adopt.py's. The hand-trimmed log whose offsets
have gaps is handled as README decides ("A log that skips offsets"): `dump-log` reads it (exit 0,
the skipped offsets noted on stderr); the checker and the daemon refuse it, naming the missing
offsets. adopt.py works on copies and checks its source is unchanged; so does each test here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.e2e.daemon_process import ROOT
from tests.shared_fixtures import shared_fixture

from . import adopt
from .test_adopt import make_command, run_adopt


class KafkaDir(NamedTuple):
    """What the fixtures' README says of a dir (its segment's offsets, its snapshot, the topics Kafka held)."""

    name: str
    end_offset: int  # one past the log's last offset
    snapshot_offset: int | None  # the end offset of the snapshot in __cluster_metadata-0, if any
    topics: int  # __consumer_offsets (50 partitions) and one data topic (1 partition), or none
    partitions: int


KAFKA_WRITTEN = (
    KafkaDir("kafka-3.9-ichwansh03", 9801, None, 2, 51),
    KafkaDir("kafka-3.6-renoagilsaputra", 18566, 7111, 2, 51),
    KafkaDir("kafka-3.6-engkoskostaman97", 510, None, 0, 0),
)
#: The checks adopt.py runs on a single-node dir (node 1 its only broker); the last two need a partition.
CHECKS = {
    "dump-log", "check", "expectation", "daemon", "state-identity", "state-epoch", "state-offset", "state-brokers",
    "state-topics", "state-partitions", "register 1", "unfence 1", "controlled-shutdown", "heartbeats", "sigterm",
    "meta-properties", "quorum-state", "check-after", "source-unchanged",
}  # fmt: skip
PARTITION_CHECKS = {"leader-and-isr", "alter-partition"}
#: The daemon's start-up line, as adopt.py's `daemon` check quotes it.
REPLAYED = re.compile(r"started: .*, (\d+) snapshot \+ (\d+) log records replayed")


def by_dir(out: str) -> dict[str, list[str]]:
    """adopt.py's check lines, by the data dir they follow (its `== DIR` line)."""
    sections: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in out.splitlines():
        if line.startswith("== "):
            lines = sections.setdefault(line.removeprefix("== "), [])
        elif line.startswith(("PASS ", "FAIL ", "SKIP ")):
            lines.append(line)
    return sections


def named(lines: list[str], status: str) -> dict[str, str]:
    """The lines of a status by check name ("PASS check: ..." -> {"check": the line})."""
    return {line.split(":", 1)[0].removeprefix(status + " "): line for line in lines if line.startswith(status + " ")}


def failed_checks(out: str) -> list[str]:
    """The checks adopt.py names under `FAILED:` (its last lines), without their dir."""
    if "FAILED:\n" not in out:
        return []
    return [line.strip().rsplit(": ", 1)[1] for line in out.split("FAILED:\n", 1)[1].splitlines() if line.strip()]


@pytest.mark.slow  # three daemons one after another: started first, so that no worker ends the suite with it
def test_make_check_kafka_dirs_adopts_every_dir_kafka_wrote(tmp_path: Path) -> None:
    sources = [shared_fixture("kafka", kafka_dir.name) for kafka_dir in KAFKA_WRITTEN]
    before = [adopt.digest(source) for source in sources]
    done = run_adopt(make_command(" ".join(map(str, sources))), tmp_path)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert out.rstrip().endswith("OK: every data dir adopted"), out
    sections = by_dir(out)
    assert list(sections) == [str(source.resolve()) for source in sources], out
    for kafka_dir, source, digest in zip(KAFKA_WRITTEN, sources, before, strict=True):
        lines = sections[str(source.resolve())]
        partitioned = kafka_dir.partitions > 0
        assert set(named(lines, "PASS")) == CHECKS | (PARTITION_CHECKS if partitioned else set()), lines
        assert set(named(lines, "SKIP")) == (set() if partitioned else PARTITION_CHECKS), lines
        passed = named(lines, "PASS")
        assert (
            f"1 broker(s), {kafka_dir.topics} topic(s), {kafka_dir.partitions} partition(s) at offset "
            f"{kafka_dir.end_offset}," in passed["expectation"]
        )
        assert f"offsets 0..{kafka_dir.end_offset}," in passed["check"]
        assert f"last applied offset {kafka_dir.end_offset} " in passed["state-offset"]
        # the snapshot inside the log is held to the log replayed to its offset, and the daemon starts from it
        snapshots = 0 if kafka_dir.snapshot_offset is None else 1
        assert f"no skipped record; {snapshots} snapshot(s) held to the log" in passed["check"]
        replayed = REPLAYED.search(passed["daemon"])
        assert replayed is not None, passed["daemon"]
        from_snapshot, from_log = int(replayed[1]), int(replayed[2])
        if kafka_dir.snapshot_offset is None:
            assert from_snapshot == 0, passed["daemon"]
        else:
            assert from_snapshot > 0 and from_log <= kafka_dir.end_offset - kafka_dir.snapshot_offset, passed["daemon"]
        assert adopt.digest(source) == digest


def test_a_log_that_skips_offsets_is_read_by_dump_log_and_refused_by_the_checker_and_the_daemon(
    tmp_path: Path,
) -> None:
    """codecrafters-trimmed: two batches Kafka wrote (offsets 1-4 and 34-35), the rest cut out by hand."""
    source = shared_fixture("kafka", "codecrafters-trimmed")
    before = adopt.digest(source)
    dump = subprocess.run(
        [sys.executable, "-m", "controller", "dump-log", str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert dump.returncode == 0, dump.stderr
    assert "skip offsets 0..0, 5..33 (no batch holds them)" in dump.stderr, dump.stderr
    batches = re.findall(r"^baseOffset: (\d+) lastOffset: (\d+) ", dump.stdout, re.MULTILINE)
    assert batches == [("1", "4"), ("34", "35")], dump.stdout
    done = run_adopt(["tests/kafka_dirs/adopt.py", str(source)], tmp_path)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr[-3000:]
    assert failed_checks(out) == ["check", "expectation", "daemon", "check-after"], out
    (lines,) = by_dir(out).values()
    assert set(named(lines, "PASS")) == {"dump-log", "source-unchanged"}, out
    failures = named(lines, "FAIL")
    for check in ("check", "expectation", "daemon", "check-after"):  # each names the first gap, where it stops
        assert "base offset 1, expected 0: offsets 0..0 are missing" in failures[check], failures[check]
    assert adopt.digest(source) == before
