"""KRaft metadata records (the values of the `__cluster_metadata` log) and their table.

Each record type is described once, like the API messages in `protocol.messages`, and is
flexible in every version. `METADATA_RECORD_TYPES` maps each record type (its api key) to its
class. How a record is framed as a log value (and read back) is `protocol.records.metadata_value`.

Rules:
- Field names are the snake_case of Kafka's; defaults are Kafka's where the schema gives one,
  otherwise the zero value of the type, so that every record can be built from keywords only.
- The reserved directory ids are `UNASSIGNED_DIRECTORY` (all zeros: "not assigned yet", which
  is also how an ONLINE replica is recorded) and `LOST_DIRECTORY` (the replica's log dir failed).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.spec import (
    ARRAY,
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    METADATA,
    STRING,
    UINT16,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

#: the log these records are the values of (Kafka's Topic.CLUSTER_METADATA_TOPIC_NAME)
METADATA_TOPIC = "__cluster_metadata"
UNASSIGNED_DIRECTORY = ZERO_UUID
LOST_DIRECTORY = uuid.UUID("00000000-0000-0000-0000-000000000001")
NO_LEADER = -1
NO_LEADER_CHANGE = -2

_IntList = tuple[int, ...]
_UuidList = tuple[uuid.UUID, ...]


# ---------------------------------------------------------------------------- brokers
@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordBrokerEndpoint(Data):
    """One listener a broker registered (name, host, port, security protocol id)."""

    name: Annotated[str, F(STRING)] = ""
    host: Annotated[str, F(STRING)] = ""
    port: Annotated[int, F(UINT16)] = 0
    security_protocol: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordBrokerFeature(Data):
    """A feature the broker supports, with its supported level range."""

    name: Annotated[str, F(STRING)] = ""
    min_supported_version: Annotated[int, F(INT16)] = 0
    max_supported_version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecord(Data):
    """A broker registered (or re-registered with a new epoch). v1 adds controlled shutdown,
    v2 the ZK-migration flag, v3 the tagged list of online log directories."""

    API: ClassVar[Api] = Api.of(0, METADATA, valid="0-3", flexible="0+")
    broker_id: Annotated[int, F(INT32)] = 0
    is_migrating_zk_broker: Annotated[bool, F(BOOL, "2+")] = False
    incarnation_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    broker_epoch: Annotated[int, F(INT64)] = 0
    end_points: Annotated[
        tuple[RegisterBrokerRecordBrokerEndpoint, ...], F(ARRAY(RegisterBrokerRecordBrokerEndpoint))
    ] = ()
    features: Annotated[tuple[RegisterBrokerRecordBrokerFeature, ...], F(ARRAY(RegisterBrokerRecordBrokerFeature))] = ()
    rack: Annotated[str | None, F(STRING, nullable="0+")] = ""
    fenced: Annotated[bool, F(BOOL)] = True
    in_controlled_shutdown: Annotated[bool, F(BOOL, "1+")] = False
    log_dirs: Annotated[_UuidList, F(ARRAY(UUID), "3+", tag=0)] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRecord(Data):
    """A broker's registration was removed."""

    API: ClassVar[Api] = Api.of(1, METADATA, valid="0", flexible="0+")
    broker_id: Annotated[int, F(INT32)] = 0
    broker_epoch: Annotated[int, F(INT64)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FenceBrokerRecord(Data):
    """The broker `id` at `epoch` is fenced (superseded by BrokerRegistrationChangeRecord)."""

    API: ClassVar[Api] = Api.of(7, METADATA, valid="0", flexible="0+")
    id: Annotated[int, F(INT32)] = 0
    epoch: Annotated[int, F(INT64)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class UnfenceBrokerRecord(Data):
    """The broker `id` at `epoch` is unfenced (superseded by BrokerRegistrationChangeRecord)."""

    API: ClassVar[Api] = Api.of(8, METADATA, valid="0", flexible="0+")
    id: Annotated[int, F(INT32)] = 0
    epoch: Annotated[int, F(INT64)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecord(Data):
    """A change to a registered broker. `fenced`: -1 unfenced, 0 unchanged, 1 fenced;
    `in_controlled_shutdown` (v1+): 0 unchanged, 1 entering; `log_dirs` (v2+): the new list."""

    API: ClassVar[Api] = Api.of(17, METADATA, valid="0-2", flexible="0+")
    broker_id: Annotated[int, F(INT32)] = 0
    broker_epoch: Annotated[int, F(INT64)] = 0
    fenced: Annotated[int, F(INT8, tag=0)] = 0
    in_controlled_shutdown: Annotated[int, F(INT8, "1+", tag=1)] = 0
    log_dirs: Annotated[_UuidList, F(ARRAY(UUID), "2+", tag=2)] = ()


# ---------------------------------------------------------------------------- topics and partitions
@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecord(Data):
    """A topic was created with this name and id."""

    API: ClassVar[Api] = Api.of(2, METADATA, valid="0", flexible="0+")
    name: Annotated[str, F(STRING)] = ""
    topic_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecord(Data):
    """A topic and all its partitions were deleted."""

    API: ClassVar[Api] = Api.of(9, METADATA, valid="0", flexible="0+")
    topic_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecord(Data):
    """The full state of a partition. v1 adds one log directory per replica (KIP-858),
    v2 the tagged eligible-leader-replica lists (KIP-966)."""

    API: ClassVar[Api] = Api.of(3, METADATA, valid="0-2", flexible="0+")
    partition_id: Annotated[int, F(INT32)] = -1
    topic_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    replicas: Annotated[_IntList, F(ARRAY(INT32))] = ()
    isr: Annotated[_IntList, F(ARRAY(INT32))] = ()
    removing_replicas: Annotated[_IntList, F(ARRAY(INT32))] = ()
    adding_replicas: Annotated[_IntList, F(ARRAY(INT32))] = ()
    leader: Annotated[int, F(INT32)] = NO_LEADER
    leader_recovery_state: Annotated[int, F(INT8, tag=0)] = 0
    leader_epoch: Annotated[int, F(INT32)] = -1
    partition_epoch: Annotated[int, F(INT32)] = -1
    directories: Annotated[_UuidList, F(ARRAY(UUID), "1+")] = ()
    eligible_leader_replicas: Annotated[_IntList | None, F(ARRAY(INT32), "2+", nullable="2+", tag=1)] = None
    last_known_elr: Annotated[_IntList | None, F(ARRAY(INT32), "2+", nullable="2+", tag=2)] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecord(Data):
    """A change to a partition: every field but the ids is tagged, and its default (None, or
    `NO_LEADER_CHANGE` / -1 for the leader and recovery state) means "unchanged"."""

    API: ClassVar[Api] = Api.of(5, METADATA, valid="0-2", flexible="0+")
    partition_id: Annotated[int, F(INT32)] = -1
    topic_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    isr: Annotated[_IntList | None, F(ARRAY(INT32), nullable="0+", tag=0)] = None
    leader: Annotated[int, F(INT32, tag=1)] = NO_LEADER_CHANGE
    replicas: Annotated[_IntList | None, F(ARRAY(INT32), nullable="0+", tag=2)] = None
    removing_replicas: Annotated[_IntList | None, F(ARRAY(INT32), nullable="0+", tag=3)] = None
    adding_replicas: Annotated[_IntList | None, F(ARRAY(INT32), nullable="0+", tag=4)] = None
    leader_recovery_state: Annotated[int, F(INT8, tag=5)] = -1
    directories: Annotated[_UuidList | None, F(ARRAY(UUID), "1+", nullable="1+", tag=8)] = None
    eligible_leader_replicas: Annotated[_IntList | None, F(ARRAY(INT32), "2+", nullable="2+", tag=6)] = None
    last_known_elr: Annotated[_IntList | None, F(ARRAY(INT32), "2+", nullable="2+", tag=7)] = None


# ---------------------------------------------------------------------------- configs, features, quotas
@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecord(Data):
    """A configuration key of a resource was set, or deleted (`value` None)."""

    API: ClassVar[Api] = Api.of(4, METADATA, valid="0", flexible="0+")
    resource_type: Annotated[int, F(INT8)] = 0
    resource_name: Annotated[str, F(STRING)] = ""
    name: Annotated[str, F(STRING)] = ""
    value: Annotated[str | None, F(STRING, nullable="0+")] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureLevelRecord(Data):
    """The finalized level of a feature (0: the feature is not enabled)."""

    API: ClassVar[Api] = Api.of(12, METADATA, valid="0", flexible="0+")
    name: Annotated[str, F(STRING)] = ""
    feature_level: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaRecordEntityData(Data):
    """One part of a quota entity: its type and name (None: the default entity)."""

    entity_type: Annotated[str, F(STRING)] = ""
    entity_name: Annotated[str | None, F(STRING, nullable="0+")] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaRecord(Data):
    """A quota of a client entity was set, or removed (`remove`, `value` then ignored)."""

    API: ClassVar[Api] = Api.of(14, METADATA, valid="0", flexible="0+")
    entity: Annotated[tuple[ClientQuotaRecordEntityData, ...], F(ARRAY(ClientQuotaRecordEntityData))] = ()
    key: Annotated[str, F(STRING)] = ""
    value: Annotated[float, F(FLOAT64)] = 0.0
    remove: Annotated[bool, F(BOOL)] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecord(Data):
    """A block of producer ids was handed to a broker; `next_producer_id` starts the next block."""

    API: ClassVar[Api] = Api.of(15, METADATA, valid="0", flexible="0+")
    broker_id: Annotated[int, F(INT32)] = 0
    broker_epoch: Annotated[int, F(INT64)] = -1
    next_producer_id: Annotated[int, F(INT64)] = 0


# ---------------------------------------------------------------------------- security
@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationTokenRecord(Data):
    """A delegation token was created or renewed."""

    API: ClassVar[Api] = Api.of(10, METADATA, valid="0", flexible="0+")
    owner: Annotated[str, F(STRING)] = ""
    requester: Annotated[str, F(STRING)] = ""
    renewers: Annotated[tuple[str, ...], F(ARRAY(STRING))] = ()
    issue_timestamp: Annotated[int, F(INT64)] = 0
    max_timestamp: Annotated[int, F(INT64)] = 0
    expiration_timestamp: Annotated[int, F(INT64)] = 0
    token_id: Annotated[str, F(STRING)] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveDelegationTokenRecord(Data):
    """A delegation token was removed (expired or cancelled)."""

    API: ClassVar[Api] = Api.of(26, METADATA, valid="0", flexible="0+")
    token_id: Annotated[str, F(STRING)] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserScramCredentialRecord(Data):
    """A user's SCRAM credential for one mechanism was set."""

    API: ClassVar[Api] = Api.of(11, METADATA, valid="0", flexible="0+")
    name: Annotated[str, F(STRING)] = ""
    mechanism: Annotated[int, F(INT8)] = 0
    salt: Annotated[bytes, F(BYTES)] = b""
    stored_key: Annotated[bytes, F(BYTES)] = b""
    server_key: Annotated[bytes, F(BYTES)] = b""
    iterations: Annotated[int, F(INT32)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveUserScramCredentialRecord(Data):
    """A user's SCRAM credential for one mechanism was removed."""

    API: ClassVar[Api] = Api.of(22, METADATA, valid="0", flexible="0+")
    name: Annotated[str, F(STRING)] = ""
    mechanism: Annotated[int, F(INT8)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryRecord(Data):
    """An ACL was created (the enums are Kafka's resource, pattern, operation and permission codes)."""

    API: ClassVar[Api] = Api.of(18, METADATA, valid="0", flexible="0+")
    id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    resource_type: Annotated[int, F(INT8)] = 0
    resource_name: Annotated[str, F(STRING)] = ""
    pattern_type: Annotated[int, F(INT8)] = 0
    principal: Annotated[str, F(STRING)] = ""
    host: Annotated[str, F(STRING)] = ""
    operation: Annotated[int, F(INT8)] = 0
    permission_type: Annotated[int, F(INT8)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveAccessControlEntryRecord(Data):
    """The ACL `id` was deleted."""

    API: ClassVar[Api] = Api.of(19, METADATA, valid="0", flexible="0+")
    id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID


# ---------------------------------------------------------------------------- controllers, migration, transactions
@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecordControllerEndpoint(Data):
    """One listener a controller registered."""

    name: Annotated[str, F(STRING)] = ""
    host: Annotated[str, F(STRING)] = ""
    port: Annotated[int, F(UINT16)] = 0
    security_protocol: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecordControllerFeature(Data):
    """A feature the controller supports, with its supported level range."""

    name: Annotated[str, F(STRING)] = ""
    min_supported_version: Annotated[int, F(INT16)] = 0
    max_supported_version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecord(Data):
    """A controller registered its endpoints and supported features."""

    API: ClassVar[Api] = Api.of(27, METADATA, valid="0", flexible="0+")
    controller_id: Annotated[int, F(INT32)] = 0
    incarnation_id: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    zk_migration_ready: Annotated[bool, F(BOOL)] = False
    end_points: Annotated[
        tuple[RegisterControllerRecordControllerEndpoint, ...], F(ARRAY(RegisterControllerRecordControllerEndpoint))
    ] = ()
    features: Annotated[
        tuple[RegisterControllerRecordControllerFeature, ...], F(ARRAY(RegisterControllerRecordControllerFeature))
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NoOpRecord(Data):
    """No change: the active controller writes it to advance the high watermark."""

    API: ClassVar[Api] = Api.of(20, METADATA, valid="0", flexible="0+")


@dataclass(frozen=True, slots=True, kw_only=True)
class ZkMigrationStateRecord(Data):
    """The ZooKeeper migration state (schema file ZkMigrationRecord.json)."""

    API: ClassVar[Api] = Api.of(21, METADATA, valid="0", flexible="0+")
    zk_migration_state: Annotated[int, F(INT8)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginTransactionRecord(Data):
    """The records up to the next End/AbortTransactionRecord are applied atomically."""

    API: ClassVar[Api] = Api.of(23, METADATA, valid="0", flexible="0+")
    name: Annotated[str | None, F(STRING, nullable="0+", tag=0)] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRecord(Data):
    """The metadata transaction begun by the last BeginTransactionRecord is complete."""

    API: ClassVar[Api] = Api.of(24, METADATA, valid="0", flexible="0+")


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortTransactionRecord(Data):
    """The metadata transaction begun by the last BeginTransactionRecord is discarded."""

    API: ClassVar[Api] = Api.of(25, METADATA, valid="0", flexible="0+")
    reason: Annotated[str | None, F(STRING, nullable="0+", tag=0)] = None


# ---------------------------------------------------------------------------- the record table
_RECORD_CLASSES: tuple[type[Data], ...] = (
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    TopicRecord,
    PartitionRecord,
    ConfigRecord,
    PartitionChangeRecord,
    FenceBrokerRecord,
    UnfenceBrokerRecord,
    RemoveTopicRecord,
    DelegationTokenRecord,
    UserScramCredentialRecord,
    FeatureLevelRecord,
    ClientQuotaRecord,
    ProducerIdsRecord,
    BrokerRegistrationChangeRecord,
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    NoOpRecord,
    ZkMigrationStateRecord,
    RemoveUserScramCredentialRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    AbortTransactionRecord,
    RemoveDelegationTokenRecord,
    RegisterControllerRecord,
)
# api key -> record class, in api key order
METADATA_RECORD_TYPES: dict[int, type[Data]] = {
    cls.API.key: cls for cls in sorted(_RECORD_CLASSES, key=lambda cls: cls.API.key)
}


def latest_version(cls: type[Data]) -> int:
    """The highest version of a record (or any message) class."""
    return max(cls.API.valid)
