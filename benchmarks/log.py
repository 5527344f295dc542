"""Metadata log benchmark: durable append throughput, and start-up cost (recovery + read + decode).

Run: `.venv/bin/python benchmarks/log.py [--seconds S] [--records N] [--dir DIR]`.

- Append: one `append` call per commit, each a group of G PartitionChangeRecords (one batch,
  one write, one fsync), for G = 1 and 50; plus a group commit of 20 one-record groups per call,
  which is what the controller does when requests queue up behind an fsync. fsync is on: the
  figures are those of the disk under `--dir` (default: a temporary directory).
- Start-up: a log of N records in batches of 50 (built with fsync off), then `MetadataLog.open`
  (recovery validates every batch) and `read()` decoding every record into a `LogEntry`.

The functions are meant to be reused by a later whole-controller benchmark.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import machine
from controller.log import MetadataLog
from protocol.records.metadata import PartitionChangeRecord
from protocol.spec import Data

TOPIC_ID = uuid.UUID("4f4e0a5b-6d7c-4e1f-9a2b-3c4d5e6f7a8b")


def isr_changes(count: int) -> list[tuple[Data, int]]:
    """`count` ISR changes, the controller's most frequent record (about 40 bytes each)."""
    return [
        (PartitionChangeRecord(partition_id=index % 1000, topic_id=TOPIC_ID, isr=(1, 2, 3), leader=1), 0)
        for index in range(count)
    ]


def append_rate(data_dir: Path, group_size: int, seconds: float, *, groups_per_commit: int = 1) -> tuple[float, float]:
    """(records/s, batches/s) of durable appends of `groups_per_commit` groups of `group_size` records."""
    groups = [isr_changes(group_size)] * groups_per_commit
    with MetadataLog.open(data_dir, fsync=True) as log:
        log.append_leader_change(log.last_epoch + 1, 1, 0)
        commits = 0
        started = time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            log.append(groups, log.last_epoch, 0)
            commits += 1
    batches = commits * groups_per_commit
    return batches * group_size / elapsed, batches / elapsed


def build_read_log(data_dir: Path, records: int, batch_size: int = 50) -> None:
    """A log of `records` ISR changes in batches of `batch_size` (written without fsync, quickly)."""
    group = isr_changes(batch_size)
    with MetadataLog.open(data_dir, fsync=False) as log:
        log.append_leader_change(log.last_epoch + 1, 1, 0)
        remaining = records
        while remaining > 0:
            commit = min(remaining // batch_size, 200) or 1
            log.append([group] * commit, log.last_epoch, 0)
            remaining -= commit * batch_size


def startup_cost(data_dir: Path) -> tuple[float, float, int]:
    """(seconds to open, seconds to read and decode every record, records read)."""
    started = time.perf_counter()
    with MetadataLog.open(data_dir, fsync=False) as log:
        opened = time.perf_counter()
        count = sum(1 for _ in log.read())
        done = time.perf_counter()
    return opened - started, done - opened, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each append case")
    parser.add_argument("--records", type=int, default=1_000_000, help="records in the start-up log")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        root = Path(scratch)
        print(f"{machine()}; log under {root}")
        print()
        print("| append (fsync on) | records/s | batches/s (= fsyncs/s x groups per commit) |")
        print("|---|---:|---:|")
        for name, group_size, per_commit in [
            ("1 group of 1 record per commit", 1, 1),
            ("1 group of 50 records per commit", 50, 1),
            ("20 groups of 1 record per commit", 1, 20),
        ]:
            records, batches = append_rate(
                root / name.replace(" ", "-"), group_size, args.seconds, groups_per_commit=per_commit
            )
            print(f"| {name} | {records:,.0f} | {batches:,.0f} |")
        print()
        build_read_log(root / "read", args.records)
        open_s, read_s, count = startup_cost(root / "read")
        print("| start-up | records | open (recovery) | read + decode | records/s (read) | records/s (open + read) |")
        print("|---|---:|---:|---:|---:|---:|")
        print(
            f"| {count:,} records, batches of 50 | {count:,} | {open_s:.2f} s | {read_s:.2f} s "
            f"| {count / read_s:,.0f} | {count / (open_s + read_s):,.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
