"""Immutable values of the controller's state: broker registrations and partition registrations.

Rules:
- A registration is replaced, never edited: `with_changes(...)` (a broker) or `merge(change)` (a
  partition) returns a new one.
- `PartitionRegistration.merge` applies a PartitionChangeRecord exactly as Kafka does: the leader
  epoch goes up by one when the record names a leader (even the same one), the partition epoch
  goes up by one for every record; absent fields (None, or leader -2) change nothing.
- A replica is offline when its directory is `LOST_DIRECTORY` (how Kafka records a failed log dir).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from protocol.records.metadata import (
    LOST_DIRECTORY,
    NO_LEADER,
    NO_LEADER_CHANGE,
    UNASSIGNED_DIRECTORY,
    PartitionChangeRecord,
    PartitionRecord,
)
from protocol.spec import builder

RECOVERED = 0
RECOVERING = 1
_LOST_DIRECTORY_INT = LOST_DIRECTORY.int


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """One broker incarnation as the log knows it."""

    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[Endpoint, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    log_dirs: tuple[uuid.UUID, ...] = ()

    @property
    def active(self) -> bool:
        """Registered, unfenced and not shutting down: may lead and join ISRs."""
        return not self.fenced and not self.in_controlled_shutdown

    def with_changes(self, **changes: object) -> BrokerRegistration:
        return replace(self, **changes)  # type: ignore[arg-type]


class PartitionRegistration(NamedTuple):
    """A partition's replicas, ISR, leader and epochs (a named tuple: replay builds many of these)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int = RECOVERED
    directories: tuple[uuid.UUID, ...] = ()

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        directories = shared_directories(record.directories or (UNASSIGNED_DIRECTORY,) * len(record.replicas))
        return _new_partition(
            (
                shared_ints(record.replicas),
                shared_ints(record.isr),
                record.leader,
                record.leader_epoch,
                record.partition_epoch,
                record.leader_recovery_state,
                directories,
            )
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, self.leader_epoch + 1
        return _new_partition(
            (
                self.replicas if change.replicas is None else shared_ints(change.replicas),
                self.isr if change.isr is None else shared_ints(change.isr),
                leader,
                leader_epoch,
                self.partition_epoch + 1,
                self.leader_recovery_state if change.leader_recovery_state == -1 else change.leader_recovery_state,
                self.directories if change.directories is None else shared_directories(change.directories),
            )
        )

    def is_offline(self, broker_id: int) -> bool:
        """Is this broker's replica of the partition on a failed log dir?"""
        try:  # compares the ints: UUID.__eq__ is a Python call, and this runs per replica per change
            return self.directories[self.replicas.index(broker_id)].int == _LOST_DIRECTORY_INT
        except (ValueError, IndexError):
            return False

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def to_record(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRecord:
        return partition_record(
            partition_id,
            topic_id,
            self.replicas,
            self.isr,
            self.leader,
            self.leader_recovery_state,
            self.leader_epoch,
            self.partition_epoch,
            self.directories,
        )


#: a PartitionRecord from its fields in this order, positionally (fast): one is built per partition
#: a snapshot holds (`PartitionRegistration.to_record`) and per partition created
partition_record = builder(
    PartitionRecord,
    "partition_id",
    "topic_id",
    "replicas",
    "isr",
    "leader",
    "leader_recovery_state",
    "leader_epoch",
    "partition_epoch",
    "directories",
)


class TopicPartition(NamedTuple):
    topic_id: uuid.UUID
    partition: int


#: The directory tuples made only of the two reserved ids, one object each (see `shared_directories`).
_SHARED_DIRECTORIES: dict[tuple[int, ...], tuple[uuid.UUID, ...]] = {}
_RESERVED_DIRECTORIES = {UNASSIGNED_DIRECTORY.int: UNASSIGNED_DIRECTORY, LOST_DIRECTORY.int: LOST_DIRECTORY}
_MAX_SHARED_DIRECTORIES = 4096
#: the tuple last given to `shared_directories` and what it returned (the given one is held, so
#: its identity cannot pass to another tuple while it is here)
_LAST_DIRECTORIES: tuple[tuple[uuid.UUID, ...], tuple[uuid.UUID, ...]] = ((), ())


def shared_directories(directories: tuple[uuid.UUID, ...]) -> tuple[uuid.UUID, ...]:
    """One shared tuple object for each combination of the reserved directory ids (unassigned,
    lost): every partition's directories are such a tuple unless a broker reported real log dirs.

    Each record decoded from the log brings UUID objects of its own; keeping them would make
    every partition hold four more objects that the cyclic garbage collector scans (a tuple and
    a UUID per replica), which at 100,000 partitions lengthens each full collection by ~3x."""
    global _LAST_DIRECTORIES
    last_given, last_shared = _LAST_DIRECTORIES
    if directories is last_given:  # the decoder gives one tuple for the same bytes (`_uuid_array`)
        return last_shared
    key = tuple([directory.int for directory in directories])
    shared = _SHARED_DIRECTORIES.get(key)
    if shared is None:
        if len(_SHARED_DIRECTORIES) >= _MAX_SHARED_DIRECTORIES or any(
            value not in _RESERVED_DIRECTORIES for value in key
        ):
            shared = directories
        else:
            shared = _SHARED_DIRECTORIES[key] = tuple([_RESERVED_DIRECTORIES[value] for value in key])
    _LAST_DIRECTORIES = (directories, shared)  # one pair, replaced whole: safe to read from any thread
    return shared


#: One tuple object per replica or ISR list (see `shared_ints`), at most `_MAX_SHARED_INTS` of them.
_SHARED_INTS: dict[tuple[int, ...], tuple[int, ...]] = {}
_MAX_SHARED_INTS = 1 << 16


def shared_ints(values: tuple[int, ...]) -> tuple[int, ...]:
    """One shared tuple object for each replica or ISR list: a cluster's partitions repeat a few
    thousand lists at most (the orders of RF brokers among its brokers), and a tuple of its own
    per partition and list costs ~64 bytes (a million partitions: ~128 MB for two lists). Once
    `_MAX_SHARED_INTS` lists are shared, further lists keep their own tuples."""
    shared = _SHARED_INTS.get(values)
    if shared is None:
        if len(_SHARED_INTS) >= _MAX_SHARED_INTS:
            return values
        shared = _SHARED_INTS[values] = values
    return shared


def _new_partition(fields: tuple[Any, ...]) -> PartitionRegistration:
    return tuple.__new__(PartitionRegistration, fields)
