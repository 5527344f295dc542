"""AlterReplicaState (api key 1000), versions 0-1, flexible from 0: fencer's KIP-589.

A broker reports that some of its replicas went OFFLINE (a failed log directory) or came back
ONLINE, so that the controller can move leadership and ISR membership without waiting for the
broker to restart. KIP-589 never received an Apache Kafka api key; key 1000 and the request's
layout are this project's own (docs/protocol.md). The request carries the broker epoch
(KIP-380) and the controller rejects it with STALE_BROKER_EPOCH when it is not current.

v0 names topics; v1 identifies them by topic id instead (as AlterPartition v2 did). The
response echoes each topic the same way, with an error code per partition.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.ids import BrokerEpoch, BrokerId
from protocol.spec import (
    ARRAY,
    INT8,
    INT16,
    INT32,
    INT64,
    REQUEST,
    RESPONSE,
    STRING,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.ALTER_REPLICA_STATE

#: NewState values. Anything else is answered with UNKNOWN_REPLICA_STATE (1000).
OFFLINE = 1
ONLINE = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterReplicaStateRequestTopicReplicas(Data):
    name: Annotated[str, F(STRING, "0")] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "1+")] = ZERO_UUID
    partitions: Annotated[tuple[int, ...], F(ARRAY(INT32))]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterReplicaStateRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-1", flexible="0+")
    broker_id: Annotated[BrokerId, F(INT32)]
    broker_epoch: Annotated[BrokerEpoch, F(INT64)]
    new_state: Annotated[int, F(INT8)]
    reason: Annotated[str, F(STRING)] = ""
    topics: Annotated[
        tuple[AlterReplicaStateRequestTopicReplicas, ...], F(ARRAY(AlterReplicaStateRequestTopicReplicas))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterReplicaStateResponsePartitionResult(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterReplicaStateResponseTopicResult(Data):
    name: Annotated[str, F(STRING, "0")] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "1+")] = ZERO_UUID
    partitions: Annotated[
        tuple[AlterReplicaStateResponsePartitionResult, ...],
        F(ARRAY(AlterReplicaStateResponsePartitionResult)),
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterReplicaStateResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-1", flexible="0+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    topics: Annotated[
        tuple[AlterReplicaStateResponseTopicResult, ...], F(ARRAY(AlterReplicaStateResponseTopicResult))
    ] = ()
