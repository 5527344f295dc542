"""EndQuorumEpoch (api key 54), versions 0-1, flexible from 1.

KRaft (KIP-595): a leader that resigns (a graceful shutdown) sends EndQuorumEpoch to the other
voters of the `__cluster_metadata` partition, so that they start an election at once instead of
waiting for their fetch timeout; it names its preferred successors, the voters whose logs are
the most caught up, which then run for leader first. Only the controller listener serves it.

fencer's codec decodes it (captures of real clusters) and every controller node serves it
(the controller quorum, `controller.server.quorum`): it is in `INBOUND_API_KEYS` (controller.ops.served)
and ApiVersions lists it.

Request: v0 holds the cluster id and, per topic and partition, the resigning leader's id and
epoch and its preferred successors (replica ids); v1 (KIP-853, dynamic quorum membership) is
the first flexible version, replaces the preferred successors with preferred candidates (replica
id and directory id) and adds the leader's endpoints (name, host, port).

Response: v0 holds a top-level error code and per partition an error code and the leader and
epoch the voter knows of; v1 (KIP-853) is flexible and adds the tagged NodeEndpoints (tag 0).
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    INT16,
    INT32,
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

API_KEY = ApiKey.END_QUORUM_EPOCH


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequestReplicaInfo(Data):
    candidate_id: Annotated[int, F(INT32, "1+")] = 0
    candidate_directory_id: Annotated[uuid.UUID, F(UUID, "1+")] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequestPartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    leader_id: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]
    preferred_successors: Annotated[tuple[int, ...], F(ARRAY(INT32), "0", ignorable=True)] = ()
    preferred_candidates: Annotated[
        tuple[EndQuorumEpochRequestReplicaInfo, ...], F(ARRAY(EndQuorumEpochRequestReplicaInfo), "1+", ignorable=True)
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequestTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[tuple[EndQuorumEpochRequestPartitionData, ...], F(ARRAY(EndQuorumEpochRequestPartitionData))]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequestLeaderEndpoint(Data):
    name: Annotated[str, F(STRING, "1+")] = ""
    host: Annotated[str, F(STRING, "1+")] = ""
    port: Annotated[int, F(UINT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-1", flexible="1+")
    cluster_id: Annotated[str | None, F(STRING, nullable="0+")] = None
    topics: Annotated[tuple[EndQuorumEpochRequestTopicData, ...], F(ARRAY(EndQuorumEpochRequestTopicData))]
    leader_endpoints: Annotated[
        tuple[EndQuorumEpochRequestLeaderEndpoint, ...],
        F(ARRAY(EndQuorumEpochRequestLeaderEndpoint), "1+", ignorable=True),
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponsePartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    leader_id: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponseTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[
        tuple[EndQuorumEpochResponsePartitionData, ...], F(ARRAY(EndQuorumEpochResponsePartitionData))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponseNodeEndpoint(Data):
    node_id: Annotated[int, F(INT32, "1+")] = 0
    host: Annotated[str, F(STRING, "1+")] = ""
    port: Annotated[int, F(UINT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-1", flexible="1+")
    error_code: Annotated[int, F(INT16)] = 0
    topics: Annotated[tuple[EndQuorumEpochResponseTopicData, ...], F(ARRAY(EndQuorumEpochResponseTopicData))]
    # v1+, tagged (tag 0): the endpoints of the leaders named in the partitions.
    node_endpoints: Annotated[
        tuple[EndQuorumEpochResponseNodeEndpoint, ...], F(ARRAY(EndQuorumEpochResponseNodeEndpoint), "1+", tag=0)
    ] = ()
