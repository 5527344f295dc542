"""Vote (api key 52), versions 0-2, flexible from 0.

KRaft's leader election (KIP-595): a controller whose election timeout expired becomes a
candidate, bumps the epoch and sends Vote to every other voter of the `__cluster_metadata`
partition, saying which epoch it stands in and how far its log goes (the epoch and offset of
its last record); a voter grants its vote once per epoch, and only to a candidate whose log is
at least as long as its own. A candidate with the votes of a majority becomes the leader and
announces it with BeginQuorumEpoch. Only the controller listener serves it.

Kafka 3.9 speaks v0-1; v2 is Kafka 4.0's (KIP-996): the PreVote flag, last in the partition data,
asks whether the voter would grant a vote without anybody bumping the epoch or persisting a
vote. fencer's voters speak it among themselves (KIP-996's pre-vote); its layout is Kafka 4.0's
VoteRequest.json (the response is unchanged in v2).

fencer's codec decodes it (captures of real clusters) and every controller node serves it
(the controller quorum, `controller.server.quorum`): it is in `INBOUND_API_KEYS` (controller.ops.served)
and ApiVersions lists it.

Request: v0 holds the cluster id and, per topic and partition, the candidate's epoch and id
and its last offset and epoch; v1 (KIP-853, dynamic quorum membership) adds the voter id of the
receiving replica and the directory ids of both the candidate and the voter (a voter is then
identified by its id and directory id together).

Response: v0 holds a top-level error code and per partition an error code, the leader it knows
of, its epoch and whether the vote was granted; v1 (KIP-853) adds the tagged NodeEndpoints (tag
0): the host and port of every leader named in the partitions.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    BOOL,
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

API_KEY = ApiKey.VOTE


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequestPartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    candidate_epoch: Annotated[int, F(INT32)]
    candidate_id: Annotated[int, F(INT32)]
    candidate_directory_id: Annotated[uuid.UUID, F(UUID, "1+", ignorable=True)] = ZERO_UUID
    voter_directory_id: Annotated[uuid.UUID, F(UUID, "1+", ignorable=True)] = ZERO_UUID
    last_offset_epoch: Annotated[int, F(INT32)]
    last_offset: Annotated[int, F(INT64)]
    pre_vote: Annotated[bool, F(BOOL, "2+")] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequestTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[tuple[VoteRequestPartitionData, ...], F(ARRAY(VoteRequestPartitionData))]


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-2", flexible="0+")
    cluster_id: Annotated[str | None, F(STRING, nullable="0+")] = None
    voter_id: Annotated[int, F(INT32, "1+", ignorable=True)] = -1
    topics: Annotated[tuple[VoteRequestTopicData, ...], F(ARRAY(VoteRequestTopicData))]


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponsePartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    leader_id: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]
    vote_granted: Annotated[bool, F(BOOL)]


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponseTopicData(Data):
    topic_name: Annotated[str, F(STRING)]
    partitions: Annotated[tuple[VoteResponsePartitionData, ...], F(ARRAY(VoteResponsePartitionData))]


# NodeEndpoint is the same struct in the Vote, BeginQuorumEpoch, EndQuorumEpoch and Fetch
# responses (NodeId, Host, Port); each module declares its own, named after its owner.
@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponseNodeEndpoint(Data):
    node_id: Annotated[int, F(INT32, "1+")] = 0
    host: Annotated[str, F(STRING, "1+")] = ""
    port: Annotated[int, F(UINT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-2", flexible="0+")
    error_code: Annotated[int, F(INT16)] = 0
    topics: Annotated[tuple[VoteResponseTopicData, ...], F(ARRAY(VoteResponseTopicData))]
    # v1+, tagged (tag 0): the endpoints of the leaders named in the partitions.
    node_endpoints: Annotated[
        tuple[VoteResponseNodeEndpoint, ...], F(ARRAY(VoteResponseNodeEndpoint), "1+", tag=0)
    ] = ()
