"""FetchSnapshot (api key 59), versions 0-1, flexible from 0.

KRaft (KIP-630): a follower (or observer) of the `__cluster_metadata` partition whose fetch
offset fell behind the leader's log start (Fetch answered with a SnapshotId) downloads that
snapshot from the leader in chunks: each request names the snapshot (end offset and epoch) and
the byte position to continue from, each response carries the snapshot's total size and the next
chunk of its bytes. Only the controller listener serves it.

fencer's codec decodes it (captures of real clusters) and every controller node serves it
(the controller quorum, `controller.server.quorum`): it is in `INBOUND_API_KEYS` (controller.ops.served)
and ApiVersions lists it.

The snapshot chunk (`UnalignedRecords`, Kafka's `records` type) stays raw bytes: it need not
end on a record batch boundary, and the codec does not parse it.

Request: v0 holds the tagged cluster id (tag 0), the replica id, the maximum bytes and per
topic and partition the current leader epoch, the snapshot id and the position; v1 (KIP-853)
adds the follower's tagged directory id (tag 0 of the partition).

Response: v0 holds the throttle time, an error code and per partition an error code, the
snapshot id, the tagged current leader (tag 0: id and epoch), the snapshot's size, the position
and the chunk; v1 (KIP-853) adds the tagged NodeEndpoints (tag 0 of the body).
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
    RECORDS,
    REQUEST,
    RESPONSE,
    STRING,
    STRUCT,
    UINT16,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.FETCH_SNAPSHOT


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequestSnapshotId(Data):
    end_offset: Annotated[int, F(INT64)]
    epoch: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequestPartitionSnapshot(Data):
    partition: Annotated[int, F(INT32)]
    current_leader_epoch: Annotated[int, F(INT32)]
    snapshot_id: Annotated[FetchSnapshotRequestSnapshotId, F(STRUCT(FetchSnapshotRequestSnapshotId))]
    position: Annotated[int, F(INT64)]
    # v1+, tagged (tag 0)
    replica_directory_id: Annotated[uuid.UUID, F(UUID, "1+", tag=0, ignorable=True)] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequestTopicSnapshot(Data):
    name: Annotated[str, F(STRING)]
    partitions: Annotated[
        tuple[FetchSnapshotRequestPartitionSnapshot, ...], F(ARRAY(FetchSnapshotRequestPartitionSnapshot))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-1", flexible="0+")
    # tagged (tag 0) in every version
    cluster_id: Annotated[str | None, F(STRING, nullable="0+", tag=0)] = None
    replica_id: Annotated[int, F(INT32)] = -1
    max_bytes: Annotated[int, F(INT32)] = 0x7FFFFFFF
    topics: Annotated[tuple[FetchSnapshotRequestTopicSnapshot, ...], F(ARRAY(FetchSnapshotRequestTopicSnapshot))]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponseSnapshotId(Data):
    end_offset: Annotated[int, F(INT64)]
    epoch: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponseLeaderIdAndEpoch(Data):
    leader_id: Annotated[int, F(INT32)] = 0
    leader_epoch: Annotated[int, F(INT32)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponsePartitionSnapshot(Data):
    index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    snapshot_id: Annotated[FetchSnapshotResponseSnapshotId, F(STRUCT(FetchSnapshotResponseSnapshotId))]
    # tagged (tag 0) in every version; written only when it differs from (0, 0), as Kafka does
    current_leader: Annotated[
        FetchSnapshotResponseLeaderIdAndEpoch, F(STRUCT(FetchSnapshotResponseLeaderIdAndEpoch), tag=0)
    ] = FetchSnapshotResponseLeaderIdAndEpoch()
    size: Annotated[int, F(INT64)]
    position: Annotated[int, F(INT64)]
    unaligned_records: Annotated[bytes, F(RECORDS)] = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponseTopicSnapshot(Data):
    name: Annotated[str, F(STRING)]
    partitions: Annotated[
        tuple[FetchSnapshotResponsePartitionSnapshot, ...], F(ARRAY(FetchSnapshotResponsePartitionSnapshot))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponseNodeEndpoint(Data):
    node_id: Annotated[int, F(INT32, "1+")] = 0
    host: Annotated[str, F(STRING, "1+")] = ""
    port: Annotated[int, F(UINT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-1", flexible="0+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    topics: Annotated[tuple[FetchSnapshotResponseTopicSnapshot, ...], F(ARRAY(FetchSnapshotResponseTopicSnapshot))]
    # v1+, tagged (tag 0): the endpoints of the leaders named in the partitions.
    node_endpoints: Annotated[
        tuple[FetchSnapshotResponseNodeEndpoint, ...], F(ARRAY(FetchSnapshotResponseNodeEndpoint), "1+", tag=0)
    ] = ()
