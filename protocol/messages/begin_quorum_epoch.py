"""BeginQuorumEpoch (api key 53), versions 0-1, flexible from 1.

KRaft (KIP-595): a candidate that won an election (Vote) sends BeginQuorumEpoch to every voter
of the `__cluster_metadata` partition, announcing itself as the leader of the new epoch; a voter
that accepts it becomes a follower and starts fetching from it (Fetch). The leader resends it
to voters that have not fetched from it yet. Only the controller listener serves it.

fencer's codec decodes it (captures of real clusters) and every controller node serves it
(the controller quorum, `controller.server.quorum`): it is in `INBOUND_API_KEYS` (controller.ops.served)
and ApiVersions lists it.

Request: v0 holds the cluster id and, per topic and partition, the new leader's id and epoch;
v1 (KIP-853, dynamic quorum membership) is the first flexible version and adds the voter id and
directory id of the receiving replica and the leader's endpoints (name, host, port).

Response: v0 holds a top-level error code and per partition an error code and the leader and
epoch the voter knows of; v1 (KIP-853) is flexible and adds the tagged NodeEndpoints (tag 0):
the host and port of every leader named in the partitions.
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

API_KEY = ApiKey.BEGIN_QUORUM_EPOCH


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequestPartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    voter_directory_id: Annotated[uuid.UUID, F(UUID, "1+", ignorable=True)] = ZERO_UUID
    leader_id: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequestTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[
        tuple[BeginQuorumEpochRequestPartitionData, ...], F(ARRAY(BeginQuorumEpochRequestPartitionData))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequestLeaderEndpoint(Data):
    name: Annotated[str, F(STRING, "1+")] = ""
    host: Annotated[str, F(STRING, "1+")] = ""
    port: Annotated[int, F(UINT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-1", flexible="1+")
    cluster_id: Annotated[str | None, F(STRING, nullable="0+")] = None
    voter_id: Annotated[int, F(INT32, "1+", ignorable=True)] = -1
    topics: Annotated[tuple[BeginQuorumEpochRequestTopicData, ...], F(ARRAY(BeginQuorumEpochRequestTopicData))]
    leader_endpoints: Annotated[
        tuple[BeginQuorumEpochRequestLeaderEndpoint, ...],
        F(ARRAY(BeginQuorumEpochRequestLeaderEndpoint), "1+", ignorable=True),
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponsePartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    leader_id: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponseTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[
        tuple[BeginQuorumEpochResponsePartitionData, ...], F(ARRAY(BeginQuorumEpochResponsePartitionData))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponseNodeEndpoint(Data):
    node_id: Annotated[int, F(INT32, "1+")] = 0
    host: Annotated[str, F(STRING, "1+")] = ""
    port: Annotated[int, F(UINT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-1", flexible="1+")
    error_code: Annotated[int, F(INT16)] = 0
    topics: Annotated[tuple[BeginQuorumEpochResponseTopicData, ...], F(ARRAY(BeginQuorumEpochResponseTopicData))]
    # v1+, tagged (tag 0): the endpoints of the leaders named in the partitions.
    node_endpoints: Annotated[
        tuple[BeginQuorumEpochResponseNodeEndpoint, ...], F(ARRAY(BeginQuorumEpochResponseNodeEndpoint), "1+", tag=0)
    ] = ()
