"""LeaderAndIsr (api key 4), versions 0-7, flexible from 4.

The controller tells each replica of a partition who leads it, in which leader epoch, with
which ISR and replica set and at which partition epoch; the broker answers with an error code
per partition. fencer sends it; the broker simulator serves it.

Request: v0-1 list partitions ungrouped, each carrying its topic name (v1 adds IsNew); v2
groups them by topic and adds the broker epoch (KIP-380), so a broker drops a request meant for
an older incarnation of itself; v3 adds the adding/removing replica sets of a reassignment; v4
is the first flexible version; v5 adds the topic id and the request Type (KIP-516); v6 adds
LeaderRecoveryState (KIP-704); v7 adds isKRaftController (KIP-866).

Response: v0-4 list partition errors with their topic names; v5 groups them under topic ids.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    BOOL,
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

API_KEY = ApiKey.LEADER_AND_ISR


# One struct for both UngroupedPartitionStates (v0-1) and TopicStates[].PartitionStates (v2+).
@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequestPartitionState(Data):
    topic_name: Annotated[str, F(STRING, "0-1", ignorable=True)] = ""
    partition_index: Annotated[int, F(INT32)]
    controller_epoch: Annotated[int, F(INT32)]
    leader: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]
    isr: Annotated[tuple[int, ...], F(ARRAY(INT32))]
    partition_epoch: Annotated[int, F(INT32)]
    replicas: Annotated[tuple[int, ...], F(ARRAY(INT32))]
    adding_replicas: Annotated[tuple[int, ...], F(ARRAY(INT32), "3+", ignorable=True)] = ()
    removing_replicas: Annotated[tuple[int, ...], F(ARRAY(INT32), "3+", ignorable=True)] = ()
    is_new: Annotated[bool, F(BOOL, "1+", ignorable=True)] = False
    leader_recovery_state: Annotated[int, F(INT8, "6+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequestTopicState(Data):
    topic_name: Annotated[str, F(STRING, "2+")] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "5+", ignorable=True)] = ZERO_UUID
    partition_states: Annotated[
        tuple[LeaderAndIsrRequestPartitionState, ...], F(ARRAY(LeaderAndIsrRequestPartitionState), "2+")
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequestLiveLeader(Data):
    broker_id: Annotated[int, F(INT32)]
    host_name: Annotated[str, F(STRING)]
    port: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-7", flexible="4+")
    controller_id: Annotated[int, F(INT32)]
    is_k_raft_controller: Annotated[bool, F(BOOL, "7+")] = False
    controller_epoch: Annotated[int, F(INT32)]
    broker_epoch: Annotated[int, F(INT64, "2+", ignorable=True)] = -1
    # v5+: 0 = unknown, 1 = incremental, 2 = full (every partition the broker should hold).
    type_: Annotated[int, F(INT8, "5+")] = 0
    ungrouped_partition_states: Annotated[
        tuple[LeaderAndIsrRequestPartitionState, ...], F(ARRAY(LeaderAndIsrRequestPartitionState), "0-1")
    ] = ()
    topic_states: Annotated[
        tuple[LeaderAndIsrRequestTopicState, ...], F(ARRAY(LeaderAndIsrRequestTopicState), "2+")
    ] = ()
    live_leaders: Annotated[tuple[LeaderAndIsrRequestLiveLeader, ...], F(ARRAY(LeaderAndIsrRequestLiveLeader))]


# One struct for both PartitionErrors (v0-4) and Topics[].PartitionErrors (v5+).
@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponsePartitionError(Data):
    topic_name: Annotated[str, F(STRING, "0-4", ignorable=True)] = ""
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponseTopicError(Data):
    topic_id: Annotated[uuid.UUID, F(UUID, "5+")] = ZERO_UUID
    partition_errors: Annotated[
        tuple[LeaderAndIsrResponsePartitionError, ...], F(ARRAY(LeaderAndIsrResponsePartitionError), "5+")
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-7", flexible="4+")
    error_code: Annotated[int, F(INT16)] = 0
    partition_errors: Annotated[
        tuple[LeaderAndIsrResponsePartitionError, ...], F(ARRAY(LeaderAndIsrResponsePartitionError), "0-4")
    ] = ()
    topics: Annotated[tuple[LeaderAndIsrResponseTopicError, ...], F(ARRAY(LeaderAndIsrResponseTopicError), "5+")] = ()
