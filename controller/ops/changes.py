"""Partition changes: the one place that builds a PartitionChangeRecord, and every record's version.

Every operation that moves a partition (AlterPartition, AlterReplicaState, fencing, unfencing,
controlled shutdown, registration, elections) builds its change here, so the rules below hold
for all of them.

Rules (docs/semantics.md):
- `change_record` builds the PartitionChangeRecord that moves a partition to a target, or None
  when nothing would change (Kafka writes no record for a no-op). Fields that stay as they are
  are left out of the record (None, leader -2, recovery state -1).
- `eligible` is the one definition of who may lead a partition or join its ISR: an active
  broker (registered, unfenced, not in controlled shutdown) whose replica is online.
- `removal` is the one rule for taking a broker out of a partition (fencing, offline replica,
  controlled shutdown): the ISR loses it unless it is the last member; if it led, the first
  eligible replica of the new ISR in assignment order leads (leader epoch + 1), or nobody (-1),
  or, for controlled shutdown, nothing changes at all.
- `bring_online` marks a replica's directory unassigned again; with `may_lead`, a leaderless
  partition whose ISR holds it (on an active broker) elects it.
- `record_version` is the one choice of the version a record is written at: the lowest that
  carries what the record holds (PartitionChangeRecord v1 for directories,
  BrokerRegistrationChangeRecord v1 for InControlledShutdown), and RegisterBrokerRecord v3 and
  PartitionRecord v1 always (they carry InControlledShutdown, log dirs and directories).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from protocol.records.metadata import (
    LOST_DIRECTORY,
    NO_LEADER,
    NO_LEADER_CHANGE,
    UNASSIGNED_DIRECTORY,
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    TopicRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)
from protocol.spec import Data, builder

from ..state.controller_state import ControllerState, RecordAndVersion
from ..state.model import PartitionRegistration, TopicPartition

Eligible = Callable[[int], bool]

#: The version every record type is written at, unless `record_version` needs a later one for its content.
_BASE_VERSIONS: dict[type, int] = {
    TopicRecord: 0,
    PartitionRecord: 1,
    PartitionChangeRecord: 0,
    RegisterBrokerRecord: 3,
    BrokerRegistrationChangeRecord: 0,
    RemoveTopicRecord: 0,
    # what the state keeps without acting on it (`state.kept`): each has only version 0
    FeatureLevelRecord: 0,
    ZkMigrationStateRecord: 0,
    RegisterControllerRecord: 0,
    # the framing of an operation of several batches (`ops.batches.in_transaction`)
    BeginTransactionRecord: 0,
    EndTransactionRecord: 0,
    AbortTransactionRecord: 0,
    ConfigRecord: 0,
    ClientQuotaRecord: 0,
    ProducerIdsRecord: 0,
    AccessControlEntryRecord: 0,
    RemoveAccessControlEntryRecord: 0,
    UserScramCredentialRecord: 0,
    DelegationTokenRecord: 0,
}


def record_version(record: Data) -> int:
    """The version `record` is written at (see the module's rules)."""
    if isinstance(record, PartitionChangeRecord):
        return 1 if record.directories is not None else 0
    if isinstance(record, BrokerRegistrationChangeRecord):
        return 1 if record.in_controlled_shutdown else 0
    return _BASE_VERSIONS[type(record)]


def versioned(record: Data) -> RecordAndVersion:
    return record, record_version(record)


def records_of(changes: Sequence[Data]) -> tuple[RecordAndVersion, ...]:
    return tuple([(change, record_version(change)) for change in changes])


def eligible(state: ControllerState, part: PartitionRegistration, broker_id: int) -> bool:
    """May this replica lead the partition or join its ISR? Active broker, replica online."""
    return state.cluster.is_active(broker_id) and not part.is_offline(broker_id)


def others_eligible(state: ControllerState, part: PartitionRegistration, leaving: int) -> Eligible:
    """Eligible, and not the broker that is leaving."""

    def others(broker_id: int) -> bool:
        return broker_id != leaving and eligible(state, part, broker_id)

    return others


def change_record(
    tp: TopicPartition,
    current: PartitionRegistration,
    *,
    isr: tuple[int, ...] | None = None,
    leader: int = NO_LEADER_CHANGE,
    directories: tuple[uuid.UUID, ...] | None = None,
    leader_recovery_state: int = -1,
) -> PartitionChangeRecord | None:
    """The record moving `current` to the given targets (None: keep), or None for a no-op."""
    new_isr = None if isr is None or isr == current.isr else isr
    new_leader = NO_LEADER_CHANGE if leader == current.leader else leader
    new_directories = None if directories is None or directories == current.directories else directories
    recovery = -1 if leader_recovery_state in (-1, current.leader_recovery_state) else leader_recovery_state
    if new_isr is None and new_leader == NO_LEADER_CHANGE and new_directories is None and recovery == -1:
        return None
    return _new_change(tp.partition, tp.topic_id, new_isr, new_leader, new_directories, recovery)


#: `change_record`'s constructor (one per partition changed: positional, fast)
_new_change = builder(
    PartitionChangeRecord, "partition_id", "topic_id", "isr", "leader", "directories", "leader_recovery_state"
)


def removal(
    tp: TopicPartition,
    part: PartitionRegistration,
    broker_id: int,
    eligible: Eligible,
    *,
    offline: bool = False,
    keep_stuck_leader: bool = False,
) -> PartitionChangeRecord | None:
    """Take `broker_id` out of a partition's ISR (and leadership); `offline` also marks its replica lost.

    `eligible(r)` says whether replica r may lead or stay in the ISR now (active broker, replica
    online); the broker being removed is never eligible.
    """
    directories = None
    if offline and broker_id in part.replicas:
        dirs = list(part.directories)
        dirs[part.replicas.index(broker_id)] = LOST_DIRECTORY
        directories = tuple(dirs)
    isr = tuple(r for r in part.isr if r != broker_id) or part.isr
    leader = part.leader
    if part.leader == broker_id:
        successor = None
        for replica in part.replicas:  # a loop, not next(generator): this runs per leadership moved
            if replica != broker_id and replica in isr and eligible(replica):
                successor = replica
                break
        if successor is not None:
            leader = successor
        elif keep_stuck_leader:
            return change_record(tp, part, directories=directories)
        else:
            leader = NO_LEADER
    return change_record(tp, part, isr=isr, leader=leader, directories=directories)


def bring_online(
    state: ControllerState, tp: TopicPartition, part: PartitionRegistration, broker_id: int, *, may_lead: bool
) -> PartitionChangeRecord | None:
    """Mark a replica online again. With `may_lead`, a leaderless partition whose ISR holds it
    (on an active broker) elects it; a re-registering broker is fenced, so it may not."""
    directories = list(part.directories)
    directories[part.replicas.index(broker_id)] = UNASSIGNED_DIRECTORY
    leader = part.leader
    if may_lead and not part.has_leader and broker_id in part.isr and state.cluster.is_active(broker_id):
        leader = broker_id
    return change_record(tp, part, directories=tuple(directories), leader=leader)
