"""Fetch (api key 1), versions 0-17, flexible from 12.

Kafka's replication and consumption request: a consumer, a follower broker or, in KRaft
(KIP-595), a follower or observer of the `__cluster_metadata` partition asks a leader for the
records after an offset. In KRaft, Fetch is also how a follower tells the leader how far it has
replicated (the leader advances the high watermark from it), how it learns that its log
diverged (DivergingEpoch: truncate to that epoch's end offset) or fell behind the log start
(SnapshotId: download that snapshot with FetchSnapshot), and who leads now (CurrentLeader).
Every listener serves it: the broker for topic partitions, the controller for the metadata log.

fencer's codec decodes it (captures of real clusters) and every controller node serves it
(the controller quorum, `controller.server.quorum`): it is in `INBOUND_API_KEYS` (controller.ops.served)
and ApiVersions lists it from v13 (`SERVED_VERSIONS` there).

The records of a partition (Kafka's `records` type) stay raw bytes: the codec does not parse
record batches here (protocol.records reads them when asked).

Request: v1-2 are v0 (v2: the requester reads message format 1); v3 adds MaxBytes (KIP-74)
and makes the partition order significant; v4 adds IsolationLevel (transactions; message
format 2); v5 adds each partition's LogStartOffset; v7 adds fetch sessions (SessionId,
SessionEpoch, ForgottenTopicsData; KIP-227); v9 adds CurrentLeaderEpoch (KIP-320); v10 allows
ZStd (KIP-110); v11 adds RackId (KIP-392); v12 is the first flexible version, adds each
partition's LastFetchedEpoch (KIP-595's divergence check) and the tagged ClusterId (tag 0);
v13 replaces topic names with topic ids (KIP-516); v14 may be answered
OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405); v15 replaces ReplicaId with the tagged ReplicaState
(tag 1: replica id and broker epoch; KIP-903); v16 is v15 (KIP-951); v17 adds each partition's
tagged ReplicaDirectoryId (tag 0; KIP-853).

Response: v1 adds ThrottleTimeMs; v4 adds LastStableOffset and AbortedTransactions; v5 adds
LogStartOffset; v7 adds the top-level ErrorCode and SessionId; v11 adds PreferredReadReplica
(KIP-392); v12 is flexible and adds the tagged DivergingEpoch (tag 0), CurrentLeader (tag 1) and
SnapshotId (tag 2) of each partition; v13 replaces topic names with topic ids; v16 adds the
tagged NodeEndpoints (tag 0 of the body: id, host, INT32 port and rack; KIP-951); v17 is v16.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    REQUEST,
    RESPONSE,
    STRING,
    STRUCT,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.FETCH


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestReplicaState(Data):
    replica_id: Annotated[int, F(INT32, "15+")] = -1
    replica_epoch: Annotated[int, F(INT64, "15+")] = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestFetchPartition(Data):
    partition: Annotated[int, F(INT32)]
    current_leader_epoch: Annotated[int, F(INT32, "9+", ignorable=True)] = -1
    fetch_offset: Annotated[int, F(INT64)]
    last_fetched_epoch: Annotated[int, F(INT32, "12+")] = -1
    log_start_offset: Annotated[int, F(INT64, "5+", ignorable=True)] = -1
    partition_max_bytes: Annotated[int, F(INT32)]
    # v17+, tagged (tag 0)
    replica_directory_id: Annotated[uuid.UUID, F(UUID, "17+", tag=0, ignorable=True)] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestFetchTopic(Data):
    topic: Annotated[str, F(STRING, "0-12", ignorable=True)] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "13+", ignorable=True)] = ZERO_UUID
    partitions: Annotated[tuple[FetchRequestFetchPartition, ...], F(ARRAY(FetchRequestFetchPartition))]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestForgottenTopic(Data):
    topic: Annotated[str, F(STRING, "7-12", ignorable=True)] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "13+", ignorable=True)] = ZERO_UUID
    partitions: Annotated[tuple[int, ...], F(ARRAY(INT32), "7+")] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-17", flexible="12+")
    # v12+, tagged (tag 0)
    cluster_id: Annotated[str | None, F(STRING, "12+", nullable="12+", tag=0, ignorable=True)] = None
    replica_id: Annotated[int, F(INT32, "0-14")] = -1
    # v15+, tagged (tag 1): replaces ReplicaId (KIP-903)
    replica_state: Annotated[FetchRequestReplicaState, F(STRUCT(FetchRequestReplicaState), "15+", tag=1)] = (
        FetchRequestReplicaState()
    )
    max_wait_ms: Annotated[int, F(INT32)]
    min_bytes: Annotated[int, F(INT32)]
    max_bytes: Annotated[int, F(INT32, "3+", ignorable=True)] = 0x7FFFFFFF
    isolation_level: Annotated[int, F(INT8, "4+", ignorable=True)] = 0
    session_id: Annotated[int, F(INT32, "7+", ignorable=True)] = 0
    session_epoch: Annotated[int, F(INT32, "7+", ignorable=True)] = -1
    topics: Annotated[tuple[FetchRequestFetchTopic, ...], F(ARRAY(FetchRequestFetchTopic))]
    forgotten_topics_data: Annotated[
        tuple[FetchRequestForgottenTopic, ...], F(ARRAY(FetchRequestForgottenTopic), "7+")
    ] = ()
    rack_id: Annotated[str, F(STRING, "11+", ignorable=True)] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseEpochEndOffset(Data):
    epoch: Annotated[int, F(INT32, "12+")] = -1
    end_offset: Annotated[int, F(INT64, "12+")] = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseLeaderIdAndEpoch(Data):
    leader_id: Annotated[int, F(INT32, "12+")] = -1
    leader_epoch: Annotated[int, F(INT32, "12+")] = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseSnapshotId(Data):
    end_offset: Annotated[int, F(INT64)] = -1
    epoch: Annotated[int, F(INT32)] = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseAbortedTransaction(Data):
    producer_id: Annotated[int, F(INT64, "4+")] = 0
    first_offset: Annotated[int, F(INT64, "4+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponsePartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    high_watermark: Annotated[int, F(INT64)]
    last_stable_offset: Annotated[int, F(INT64, "4+", ignorable=True)] = -1
    log_start_offset: Annotated[int, F(INT64, "5+", ignorable=True)] = -1
    # v12+, tagged (tags 0, 1, 2): each written only when it differs from its default (-1, -1)
    diverging_epoch: Annotated[FetchResponseEpochEndOffset, F(STRUCT(FetchResponseEpochEndOffset), "12+", tag=0)] = (
        FetchResponseEpochEndOffset()
    )
    current_leader: Annotated[FetchResponseLeaderIdAndEpoch, F(STRUCT(FetchResponseLeaderIdAndEpoch), "12+", tag=1)] = (
        FetchResponseLeaderIdAndEpoch()
    )
    snapshot_id: Annotated[FetchResponseSnapshotId, F(STRUCT(FetchResponseSnapshotId), "12+", tag=2)] = (
        FetchResponseSnapshotId()
    )
    aborted_transactions: Annotated[
        tuple[FetchResponseAbortedTransaction, ...] | None,
        F(ARRAY(FetchResponseAbortedTransaction), "4+", nullable="4+", ignorable=True),
    ] = ()
    preferred_read_replica: Annotated[int, F(INT32, "11+")] = -1
    # raw record batches, never parsed here; null in Kafka's default
    records: Annotated[bytes | None, F(RECORDS, nullable="0+")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseFetchableTopicResponse(Data):
    topic: Annotated[str, F(STRING, "0-12", ignorable=True)] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "13+", ignorable=True)] = ZERO_UUID
    partitions: Annotated[tuple[FetchResponsePartitionData, ...], F(ARRAY(FetchResponsePartitionData))]


# Unlike the Raft RPCs' NodeEndpoint, Fetch's (KIP-951) has an INT32 port and a rack.
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseNodeEndpoint(Data):
    node_id: Annotated[int, F(INT32, "16+")] = 0
    host: Annotated[str, F(STRING, "16+")] = ""
    port: Annotated[int, F(INT32, "16+")] = 0
    rack: Annotated[str | None, F(STRING, "16+", nullable="16+")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-17", flexible="12+")
    throttle_time_ms: Annotated[int, F(INT32, "1+", ignorable=True)] = 0
    error_code: Annotated[int, F(INT16, "7+", ignorable=True)] = 0
    session_id: Annotated[int, F(INT32, "7+")] = 0
    responses: Annotated[tuple[FetchResponseFetchableTopicResponse, ...], F(ARRAY(FetchResponseFetchableTopicResponse))]
    # v16+, tagged (tag 0): the endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER and
    # FENCED_LEADER_EPOCH partition errors.
    node_endpoints: Annotated[
        tuple[FetchResponseNodeEndpoint, ...], F(ARRAY(FetchResponseNodeEndpoint), "16+", tag=0)
    ] = ()
