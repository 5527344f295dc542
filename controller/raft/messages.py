"""The Raft RPCs as the core reads and writes them: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch
and FetchSnapshot, one request and one response class each.

Rules:
- Each class keeps the fields of Kafka's RPC that the core decides on, under the wire's names
  where they exist (`protocol.messages.vote` and its siblings); the shell maps one to the other
  for the single partition `__cluster_metadata-0` (topic name, topic id, partition index,
  directory ids and endpoints are the shell's). A leader id of -1 on the wire is `None` here.
- One `error` per message. The shell puts INCONSISTENT_CLUSTER_ID (and BROKER_NOT_AVAILABLE
  while shutting down) at the top level of the wire response, the rest in the partition, and
  hands a response's top-level error to the core in the same field (`TOP_LEVEL_ERRORS`: the
  core then reads nothing else of that response).
- Records are summaries: a `Batch` is a base offset, a last offset and an epoch, plus an opaque
  `payload` the core carries from a response to its `AppendBatches` action without reading it
  (the shell's record bytes; the simulated harness's entries). A leader's `FetchResponse` says
  where the records start (`records_from_offset`) and leaves `records` empty: the shell reads
  the batches from its log from that offset on, as many as it wants to send, and fills them in.
  A `FetchSnapshotResponse` names the snapshot and leaves `payload` to the shell likewise (the
  whole snapshot as far as the core is concerned: chunking and positions are the shell's).
- Pre-vote (KIP-996) is `VoteRequest.pre_vote`: Vote v2 on the wire. Fetch's `high_watermark`
  (the follower's, so that the leader answers at once when it moved) is not on the wire before
  Fetch v18 (Kafka 4.1); the shell sends what its version carries and passes -1 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.error_codes import ErrorCode

from .ids import Epoch, NodeId, OffsetAndEpoch

#: Errors that answer the whole request (the wire's top-level error code).
TOP_LEVEL_ERRORS = frozenset({ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.BROKER_NOT_AVAILABLE})


@dataclass(frozen=True, slots=True)
class Batch:
    """A record batch of the log: offsets `base_offset`..`last_offset` (inclusive), one epoch."""

    base_offset: int
    last_offset: int
    epoch: Epoch
    payload: object = None

    @property
    def end_offset(self) -> int:
        return self.last_offset + 1


@dataclass(frozen=True, slots=True)
class VoteRequest:
    cluster_id: str | None
    candidate_epoch: Epoch  # a pre-vote's is the prospective's current epoch, not the next one
    candidate_id: NodeId
    voter_id: NodeId  # the voter it is meant for (Vote v1+)
    last_offset_epoch: Epoch
    last_offset: int  # the candidate's log end offset
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error: ErrorCode
    leader_id: NodeId | None
    leader_epoch: Epoch
    vote_granted: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    cluster_id: str | None
    leader_id: NodeId
    leader_epoch: Epoch
    voter_id: NodeId


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error: ErrorCode
    leader_id: NodeId | None
    leader_epoch: Epoch


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    cluster_id: str | None
    leader_id: NodeId
    leader_epoch: Epoch
    #: the other voters, the most caught up first (v0's PreferredSuccessors, v1's candidates)
    preferred_successors: tuple[NodeId, ...]


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error: ErrorCode
    leader_id: NodeId | None
    leader_epoch: Epoch


@dataclass(frozen=True, slots=True)
class FetchRequest:
    cluster_id: str | None
    replica_id: NodeId
    current_leader_epoch: Epoch
    fetch_offset: int  # the fetcher's log end offset, flushed (a voter's counts for the HW)
    last_fetched_epoch: Epoch  # the epoch of the fetcher's last batch
    high_watermark: int = -1
    max_wait_ms: int = 0


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error: ErrorCode
    leader_id: NodeId | None  # CurrentLeader
    leader_epoch: Epoch
    high_watermark: int = -1
    log_start_offset: int = -1
    diverging_epoch: OffsetAndEpoch | None = None  # DivergingEpoch: (end offset, epoch)
    snapshot_id: OffsetAndEpoch | None = None  # SnapshotId: (end offset, epoch)
    records_from_offset: int | None = None  # set by the core: the shell reads from here
    records: tuple[Batch, ...] = ()  # filled by the shell


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    cluster_id: str | None
    replica_id: NodeId
    current_leader_epoch: Epoch
    snapshot_id: OffsetAndEpoch
    position: int = 0


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    error: ErrorCode
    leader_id: NodeId | None
    leader_epoch: Epoch
    snapshot_id: OffsetAndEpoch | None = None
    payload: object = None  # filled by the shell: the snapshot


Request = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest
Response = VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse | FetchSnapshotResponse
