"""DescribeQuorum (api key 55), versions 0-2, flexible from 0.

KRaft (KIP-595): an admin client (`kafka-metadata-quorum describe`, sent to a broker, which
forwards it, or straight to a controller) asks the leader of the `__cluster_metadata`
partition for the state of the quorum: who leads it in which epoch, the high watermark, and
how far each voter and observer has replicated. Both the broker and the controller listeners
serve it.

fencer's codec decodes it (captures of real clusters) and every controller node serves it
(the controller quorum, `controller.server.quorum`): it is in `INBOUND_API_KEYS` (controller.ops.served)
and ApiVersions lists it.

Request: the same in every version: topics and partitions (in practice `__cluster_metadata`
partition 0). v1 and v2 changed only the response.

Response: v0 holds a top-level error code and per partition an error code, the leader's id and
epoch, the high watermark and the replica state (replica id, log end offset) of every current
voter and observer; v1 (KIP-836) adds each replica's last fetch and last caught-up timestamps;
v2 (KIP-853, dynamic quorum membership) adds a top-level and per-partition error message, each
replica's directory id and the Nodes (every voter's id and listeners: name, host, port).
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    INT16,
    INT32,
    INT64,
    REQUEST,
    RESPONSE,
    STRING,
    UINT16,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.DESCRIBE_QUORUM


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumRequestPartitionData(Data):
    partition_index: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumRequestTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[tuple[DescribeQuorumRequestPartitionData, ...], F(ARRAY(DescribeQuorumRequestPartitionData))]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-2", flexible="0+")
    topics: Annotated[tuple[DescribeQuorumRequestTopicData, ...], F(ARRAY(DescribeQuorumRequestTopicData))]


# Kafka's common struct ReplicaState: both CurrentVoters and Observers.
@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponseReplicaState(Data):
    replica_id: Annotated[int, F(INT32)]
    replica_directory_id: Annotated[uuid.UUID, F(UUID, "2+")] = ZERO_UUID
    log_end_offset: Annotated[int, F(INT64)]
    last_fetch_timestamp: Annotated[int, F(INT64, "1+", ignorable=True)] = -1
    last_caught_up_timestamp: Annotated[int, F(INT64, "1+", ignorable=True)] = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponsePartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, "2+", nullable="2+", ignorable=True)] = ""
    leader_id: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]
    high_watermark: Annotated[int, F(INT64)]
    current_voters: Annotated[
        tuple[DescribeQuorumResponseReplicaState, ...], F(ARRAY(DescribeQuorumResponseReplicaState))
    ]
    observers: Annotated[tuple[DescribeQuorumResponseReplicaState, ...], F(ARRAY(DescribeQuorumResponseReplicaState))]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponseTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[
        tuple[DescribeQuorumResponsePartitionData, ...], F(ARRAY(DescribeQuorumResponsePartitionData))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponseListener(Data):
    name: Annotated[str, F(STRING, "2+")] = ""
    host: Annotated[str, F(STRING, "2+")] = ""
    port: Annotated[int, F(UINT16, "2+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponseNode(Data):
    node_id: Annotated[int, F(INT32, "2+")] = 0
    listeners: Annotated[
        tuple[DescribeQuorumResponseListener, ...], F(ARRAY(DescribeQuorumResponseListener), "2+")
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeQuorumResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-2", flexible="0+")
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, "2+", nullable="2+", ignorable=True)] = ""
    topics: Annotated[tuple[DescribeQuorumResponseTopicData, ...], F(ARRAY(DescribeQuorumResponseTopicData))]
    nodes: Annotated[tuple[DescribeQuorumResponseNode, ...], F(ARRAY(DescribeQuorumResponseNode), "2+")] = ()
