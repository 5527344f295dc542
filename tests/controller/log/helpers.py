"""Shared pieces of the metadata log tests: sample records, a Hypothesis strategy, file surgery."""

from __future__ import annotations

import uuid
from pathlib import Path

from hypothesis import strategies as st

from controller.log import MetadataLog
from controller.log.segments import PARTITION_DIR, segment_name
from protocol.records.metadata import (
    METADATA_RECORD_TYPES,
    PartitionChangeRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from protocol.spec import Data
from tests.protocol.strategies import messages

TOPIC_ID = uuid.UUID("4f4e0a5b-6d7c-4e1f-9a2b-3c4d5e6f7a8b")
RecordAndVersion = tuple[Data, int]


def topic(name: str) -> RecordAndVersion:
    return TopicRecord(name=name, topic_id=TOPIC_ID), 0


def isr_change(partition: int, isr: tuple[int, ...], leader: int = -2) -> RecordAndVersion:
    return PartitionChangeRecord(partition_id=partition, topic_id=TOPIC_ID, isr=isr, leader=leader), 0


def tiny() -> RecordAndVersion:
    """The smallest record there is: a batch of it is 90 bytes, which keeps exhaustive loops short."""
    return RemoveTopicRecord(topic_id=TOPIC_ID), 0


def metadata_records() -> st.SearchStrategy[RecordAndVersion]:
    """Any metadata record type at any of its versions, with random field values."""
    kinds = [(cls, version) for cls in METADATA_RECORD_TYPES.values() for version in cls.API.valid]
    return st.sampled_from(kinds).flatmap(lambda kind: messages(kind[0], kind[1]).map(lambda msg: (msg, kind[1])))


def partition_dir(data_dir: Path) -> Path:
    return data_dir / PARTITION_DIR


def segment(data_dir: Path, base_offset: int = 0) -> Path:
    return partition_dir(data_dir) / segment_name(base_offset)


def flip_bit(data: bytes, position: int, bit: int) -> bytes:
    mutated = bytearray(data)
    mutated[position] ^= 1 << bit
    return bytes(mutated)


def open_log(data_dir: Path, **options: object) -> MetadataLog:
    """Open (formatting on first use) with the tests' cluster id; options as `MetadataLog.open`'s."""
    options.setdefault("cluster_id", "fencer-log-tests")
    return MetadataLog.open(data_dir, **options)  # type: ignore[arg-type]


def build_log(data_dir: Path, groups: list[list[RecordAndVersion]], **options: object) -> MetadataLog:
    """A log holding a LeaderChange at epoch 1 then one batch per group, left open."""
    log = open_log(data_dir, **options)
    log.append_leader_change(log.last_epoch + 1, 1, 1_000)
    for index, group in enumerate(groups):
        log.append([group], log.last_epoch, 2_000 + index)
    return log


def entries(log: MetadataLog, start: int = 0) -> list[tuple[int, int, Data, int, bool]]:
    """The log's records as comparable tuples: (offset, epoch, record, version, control)."""
    return [(e.offset, e.epoch, e.record, e.version, e.control) for e in log.read(start)]
