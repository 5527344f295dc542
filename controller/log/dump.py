"""`python -m controller dump-log PATH...`: print a metadata log as Kafka's dump tool prints it.

Each PATH is a data directory (its `__cluster_metadata-0` segments, its snapshots, then its
`bootstrap.checkpoint` if any), a `__cluster_metadata-0` directory, or one file: a segment
(`<base offset>.log`), a snapshot (`<end offset>-<epoch>.checkpoint`) or a `bootstrap.checkpoint`.
The output is that of `kafka-dump-log --cluster-metadata-decoder --files <segment>` for every
segment in offset order, then for every snapshot (`.checkpoint`) in (end offset, epoch) order:

    Dumping <path>
    Log starting offset: <base offset>        (a snapshot: Snapshot end offset: <o>, epoch: <e>)
    baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 ... crc: <crc> isvalid: true
    | offset: 0 CreateTime: <ms> keySize: 4 valueSize: 14 sequence: -1 headerKeys: [] LeaderChange: {...}
    | offset: 1 CreateTime: <ms> keySize: -1 valueSize: 31 sequence: -1 headerKeys: [] payload: {"type":...}

Control records print as Kafka prints them (`LeaderChange: {...}`, `SnapshotHeader {...}`,
`SnapshotFooter {...}`, `KRaftVersion {...}`, `KRaftVoters {...}`); metadata records as
`payload: {"type":"TOPIC_RECORD","version":0,"data":{...}}`, field names and values as Kafka's
JSON converters write them (`kafka_json`).

Rules:
- Read-only: files are opened for reading, never created, truncated or deleted; recovery does
  not run. A torn tail that the controller would cut at its next start is reported here.
- Batches are checked as recovery checks them (`decode_batch`, offsets that never go back, the
  epoch discipline), except that offsets may skip forward, as Kafka's dump tool reads such a log
  (a trimmed or compacted one): the skipped offsets are noted on stderr, and the exit status is 0.
  At the first bad batch of a file the dump prints `Found N invalid bytes at the end of <file>:
  at byte P (offset O): <why>` and goes on with the next file; snapshots are
  also checked for their header and footer.
- A file named like neither a segment nor a snapshot is read as a segment starting at offset 0;
  `bootstrap.checkpoint` is headed `Bootstrap checkpoint` and checked as a snapshot.
- Exit status: 0 when everything is valid, 1 when any file has invalid bytes or a record that
  cannot be decoded, 2 for bad usage (no such path, a directory that is not a data directory);
  nothing is printed for any PATH if one is bad usage.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path
from typing import TextIO

from protocol.errors import DecodeError
from protocol.records.batch import TIMESTAMP_TYPE_FLAG, Record, RecordBatch
from protocol.records.control import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
    decode_control_record,
)
from protocol.records.metadata_value import UnknownRecordTypeError, decode_metadata_value

from .bootstrap import BOOTSTRAP_FILE
from .kafka_json import dumps, metadata_payload, to_json_tree
from .segments import PARTITION_DIR, BadBatch, Continuity, Fault, ScannedBatch, list_segments, scan_segment
from .snapshots import SnapshotError, list_snapshots, read_snapshot_file, snapshot_id_of

_DELETE_HORIZON_FLAG = 0x40
_CONTROL_LABELS = {
    LeaderChangeMessage: "LeaderChange:",
    SnapshotHeaderRecord: "SnapshotHeader",
    SnapshotFooterRecord: "SnapshotFooter",
    KRaftVersionRecord: "KRaftVersion",
    VotersRecord: "KRaftVoters",
}
_COMPRESSION_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `dump-log` command's arguments."""
    parser.add_argument(
        "paths",
        metavar="PATH",
        type=Path,
        nargs="+",
        help="a data directory, its __cluster_metadata-0 directory, or a .log or .checkpoint file",
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Dump every path of `args.paths`; return the exit status."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    targets = [_target(path) for path in args.paths]
    bad = [target for target in targets if isinstance(target, str)]
    if bad:
        for message in bad:
            print(f"dump-log: error: {message}", file=err)
        return 2
    dumper = _Dumper(out)
    for target in targets:
        assert not isinstance(target, str)
        partition, files = target
        if partition is not None:
            dumper.dump_partition(partition)
        for path in files:
            dumper.dump_single(path)
    if dumper.gaps:
        listed = ", ".join(f"{first}..{last}" for first, last in dumper.gaps)
        print(f"dump-log: note: the segments skip offsets {listed} (no batch holds them)", file=err)
    return 1 if dumper.problems else 0


def _target(path: Path) -> tuple[Path | None, list[Path]] | str:
    """(the `__cluster_metadata-0` directory to dump or None, the single files after it), or why
    `path` cannot be dumped."""
    if not path.exists():
        return f"no such file or directory: {path}"
    if not path.is_dir():
        return None, [path]
    if path.name == PARTITION_DIR:
        return path, []
    if not (path / PARTITION_DIR).is_dir():
        return f"{path} is not a controller data directory (it has no {PARTITION_DIR}/)"
    bootstrap = path / BOOTSTRAP_FILE
    return path / PARTITION_DIR, [bootstrap] if bootstrap.is_file() else []


class _Dumper:
    """Prints files batch by batch and counts the problems found."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.problems = 0
        #: offsets the segments skip: shown as Kafka's tool shows them (not at all), then noted
        self.gaps: list[tuple[int, int]] = []

    def dump_partition(self, partition: Path) -> None:
        """Every segment in offset order (checked across files), then every snapshot."""
        continuity = Continuity(allow_gaps=True)
        for base_offset, path in list_segments(partition):
            if not self.dump_file(path, f"Log starting offset: {base_offset}", continuity, base_offset):
                self.gaps += continuity.gaps
                continuity = Continuity(allow_gaps=True)  # a fresh start: the files after a fault are checked alone
        self.gaps += continuity.gaps
        for snapshot_id, path in list_snapshots(partition):
            self.dump_snapshot(path, f"Snapshot end offset: {snapshot_id.end_offset}, epoch: {snapshot_id.epoch}")

    def dump_single(self, path: Path) -> None:
        """One file, told by its name: a snapshot, bootstrap.checkpoint, else a segment."""
        snapshot_id = snapshot_id_of(path.name)
        if snapshot_id is not None:
            self.dump_snapshot(path, f"Snapshot end offset: {snapshot_id.end_offset}, epoch: {snapshot_id.epoch}")
        elif path.name == BOOTSTRAP_FILE:
            self.dump_snapshot(path, "Bootstrap checkpoint")
        else:
            base = int(path.stem) if path.suffix == ".log" and path.stem.isdigit() else 0
            continuity = Continuity(allow_gaps=True)
            self.dump_file(path, f"Log starting offset: {base}", continuity, base)
            self.gaps += continuity.gaps

    def dump_snapshot(self, path: Path, header: str) -> None:
        if self.dump_file(path, header, Continuity(), 0):
            self.check_snapshot(path)

    def dump_file(self, path: Path, header: str, continuity: Continuity, base_offset: int) -> bool:
        """Print one file; False (and a `Found ... invalid bytes` line) if it has a bad batch."""
        print(f"Dumping {path}", file=self.out)
        print(header, file=self.out)
        fault = continuity.start_segment(base_offset)
        try:
            for scanned in scan_segment(path) if fault is None else ():
                fault = continuity.check(scanned.position, scanned.batch)
                if fault is not None:
                    break
                self._print_batch(scanned)
        except BadBatch as bad:
            expected = continuity.next_offset if continuity.next_offset is not None else base_offset
            fault = Fault(bad.position, expected, bad.reason)
        if fault is None:
            return True
        invalid = path.stat().st_size - fault.position
        where = f"at byte {fault.position} (offset {fault.offset}): {fault.reason}"
        print(f"Found {invalid} invalid bytes at the end of {path.name}: {where}", file=self.out)
        self.problems += 1
        return False

    def check_snapshot(self, path: Path) -> None:
        try:
            read_snapshot_file(path)
        except SnapshotError as exc:
            print(f"Invalid snapshot {path.name}: {exc}", file=self.out)
            self.problems += 1

    def _print_batch(self, scanned: ScannedBatch) -> None:
        print(batch_line(scanned), file=self.out)
        batch = scanned.batch
        for record in batch.records:
            print(self._record_line(batch, record), file=self.out)

    def _record_line(self, batch: RecordBatch, record: Record) -> str:
        offset = batch.base_offset + record.offset_delta
        sequence = -1 if batch.base_sequence < 0 else (batch.base_sequence + record.offset_delta) & 0x7FFFFFFF
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        line = (
            f"| offset: {offset} {_timestamp_type(batch)}: {batch.base_timestamp + record.timestamp_delta} "
            f"keySize: {key_size} valueSize: {value_size} sequence: {sequence} "
            f"headerKeys: [{','.join(key for key, _ in record.headers)}]"
        )
        try:
            if batch.is_control:
                return line + _control_text(record)
            return line + " payload: " + metadata_payload(*decode_metadata_value(record.value))
        except DecodeError as exc:
            self.problems += 1
            return f"{line} payload: Error at {offset}, skipping. {exc}"


def batch_line(scanned: ScannedBatch) -> str:
    """Kafka's line for one batch (`printBatchLevel`)."""
    batch = scanned.batch
    last_sequence = -1 if batch.base_sequence < 0 else batch.base_sequence + batch.last_offset_delta
    horizon = (
        f"OptionalLong[{batch.base_timestamp}]" if batch.attributes & _DELETE_HORIZON_FLAG else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {len(batch.records)} "
        f"baseSequence: {batch.base_sequence} lastSequence: {last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {_java(batch.is_transactional)} isControl: {_java(batch.is_control)} "
        f"deleteHorizonMs: {horizon} position: {scanned.position} {_timestamp_type(batch)}: {batch.max_timestamp} "
        f"size: {scanned.size} magic: 2 compresscodec: {_COMPRESSION_NAMES[batch.compression]} "
        f"crc: {scanned.crc} isvalid: true"
    )


def _control_text(record: Record) -> str:
    try:
        message, version = decode_control_record(record.key, record.value)
    except UnknownRecordTypeError:
        assert record.key is not None  # decoding checked it is a 4-byte key
        type_id = struct.unpack(">h", record.key[2:4])[0]
        return f" controlType: UNKNOWN({type_id})"
    return f" {_CONTROL_LABELS[type(message)]} {dumps(to_json_tree(message, version))}"


def _timestamp_type(batch: RecordBatch) -> str:
    return "LogAppendTime" if batch.attributes & TIMESTAMP_TYPE_FLAG else "CreateTime"


def _java(flag: bool) -> str:
    return "true" if flag else "false"
