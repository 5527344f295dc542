"""StopReplica (api key 5), versions 0-4, flexible from 2.

The controller tells a broker to stop replicating partitions, and optionally to delete them
(topic deletion, reassignment away from the broker); the broker answers per partition. fencer
sends it; the broker simulator serves it.

Request: v0 lists ungrouped (topic, partition) pairs under one DeletePartitions flag; v1
groups partition indexes by topic and adds the broker epoch (KIP-380); v2 is the first
flexible version; v3 replaces the grouped list with per-topic partition states carrying each
partition's leader epoch and its own delete flag (KIP-570: the broker refuses a stop whose
epoch is older than its own with FENCED_LEADER_EPOCH; -1 "no epoch" and -2 "topic deletion"
skip that check); v4 adds isKRaftController (KIP-866).

Response: the same body in every version.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import ARRAY, BOOL, INT16, INT32, INT64, REQUEST, RESPONSE, STRING, Api, Data, F

API_KEY = ApiKey.STOP_REPLICA


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequestPartitionV0(Data):
    topic_name: Annotated[str, F(STRING, "0")] = ""
    partition_index: Annotated[int, F(INT32, "0")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequestTopicV1(Data):
    name: Annotated[str, F(STRING, "1-2")] = ""
    partition_indexes: Annotated[tuple[int, ...], F(ARRAY(INT32), "1-2")] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequestPartitionState(Data):
    partition_index: Annotated[int, F(INT32, "3+")] = 0
    leader_epoch: Annotated[int, F(INT32, "3+")] = -1
    delete_partition: Annotated[bool, F(BOOL, "3+")] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequestTopicState(Data):
    topic_name: Annotated[str, F(STRING, "3+")] = ""
    partition_states: Annotated[
        tuple[StopReplicaRequestPartitionState, ...], F(ARRAY(StopReplicaRequestPartitionState), "3+")
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-4", flexible="2+")
    controller_id: Annotated[int, F(INT32)]
    is_k_raft_controller: Annotated[bool, F(BOOL, "4+")] = False
    controller_epoch: Annotated[int, F(INT32)]
    broker_epoch: Annotated[int, F(INT64, "1+", ignorable=True)] = -1
    delete_partitions: Annotated[bool, F(BOOL, "0-2")] = False
    ungrouped_partitions: Annotated[
        tuple[StopReplicaRequestPartitionV0, ...], F(ARRAY(StopReplicaRequestPartitionV0), "0")
    ] = ()
    topics: Annotated[tuple[StopReplicaRequestTopicV1, ...], F(ARRAY(StopReplicaRequestTopicV1), "1-2")] = ()
    topic_states: Annotated[tuple[StopReplicaRequestTopicState, ...], F(ARRAY(StopReplicaRequestTopicState), "3+")] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponsePartitionError(Data):
    topic_name: Annotated[str, F(STRING)]
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-4", flexible="2+")
    error_code: Annotated[int, F(INT16)] = 0
    partition_errors: Annotated[
        tuple[StopReplicaResponsePartitionError, ...], F(ARRAY(StopReplicaResponsePartitionError))
    ] = ()
