"""Start-up figures for benchmarks/core.py: real data dirs, built quickly, opened the way the daemon does.

Each data dir holds a cluster the core can replay: 6 brokers, topics of RF 3, then ISR changes
(shrink to two members, expand back to three). The timed part is `ControllerEngine.start`: open,
recover (validate every batch), load the snapshot, replay the tail, append the new epoch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from controller.engine import ControllerEngine
from controller.log import MetadataLog
from controller.state.controller_state import ControllerConfig
from protocol.records.metadata import PartitionChangeRecord, PartitionRecord
from protocol.spec import Data

from .core import BROKERS, CLUSTER_ID, brokers_records, topic_records

BATCH = 50


def _isr_changes(partitions: list[PartitionRecord], count: int) -> Iterator[tuple[Data, int]]:
    for i in range(count):
        part = partitions[i % len(partitions)]
        shrink = (i // len(partitions)) % 2 == 0
        isr = part.replicas[:2] if shrink else part.replicas
        yield PartitionChangeRecord(partition_id=part.partition_id, topic_id=part.topic_id, isr=isr), 0


def _append_all(log: MetadataLog, records: Iterator[tuple[Data, int]] | list[tuple[Data, int]]) -> None:
    group: list[tuple[Data, int]] = []
    groups: list[list[tuple[Data, int]]] = []
    for item in records:
        group.append(item)
        if len(group) == BATCH:
            groups.append(group)
            group = []
            if len(groups) == 200:
                log.append(groups, log.last_epoch, 0)
                groups = []
    if group:
        groups.append(group)
    if groups:
        log.append(groups, log.last_epoch, 0)


def _cluster(partitions: int) -> tuple[list[tuple[Data, int]], list[PartitionRecord]]:
    records = brokers_records()
    _, topic = topic_records("startup", partitions)
    records.extend(topic)
    return records, [record for record, _ in topic if isinstance(record, PartitionRecord)]


def _timed_start(data_dir: Path) -> tuple[float, ControllerEngine]:
    started = time.perf_counter()
    engine = ControllerEngine.start(data_dir, config=ControllerConfig(cluster_id=CLUSTER_ID, node_id=3000))
    return time.perf_counter() - started, engine


def bench_startup_from_log(data_dir: Path, total_records: int) -> str:
    base, partitions = _cluster(1000)
    log = MetadataLog.open(data_dir, cluster_id=CLUSTER_ID, node_id=3000, fsync=False)
    log.append_leader_change(1, 3000, 0)
    _append_all(log, base)
    _append_all(log, _isr_changes(partitions, total_records - len(base) - 1))
    log.close()
    seconds, engine = _timed_start(data_dir)
    replayed = engine.startup.replayed_records
    assert len(engine.core.state.cluster.brokers) == BROKERS
    engine.close()
    return f"| start-up from a log of {replayed:,} records | {seconds:.2f} s ({replayed / seconds:,.0f} records/s) |"


def write_snapshot_image(
    data_dir: Path, base: list[tuple[Data, int]], partitions: list[PartitionRecord], tail: int
) -> None:
    """A data dir as a controller leaves it: a snapshot of `base` (the log below it deleted), then
    `tail` ISR changes of `partitions` in the log, written by the controller's own log writer."""
    log = MetadataLog.open(data_dir, cluster_id=CLUSTER_ID, node_id=3000, fsync=False)
    log.append_leader_change(1, 3000, 0)
    _append_all(log, base)
    log.write_snapshot(log.next_offset, 1, base, 0)
    log.delete_segments_below(log.next_offset)
    _append_all(log, _isr_changes(partitions, tail))
    log.close()


def bench_startup_from_snapshot(data_dir: Path, partitions: int, tail: int) -> str:
    base, partition_records = _cluster(partitions)
    write_snapshot_image(data_dir, base, partition_records, tail)
    seconds, engine = _timed_start(data_dir)
    startup = engine.startup
    assert startup.snapshot is not None and len(engine.core.state.replication.names) == 1
    engine.close()
    return (
        f"| start-up from a snapshot of {partitions:,} partitions (RF 3, {startup.snapshot_records:,} records) "
        f"plus a {startup.replayed_records:,}-record tail | {seconds:.2f} s |"
    )
