"""How a Raft node answers the requests of its peers (Kafka's `KafkaRaftClient.handle*Request`).

Rules:
- A request that cannot be accepted changes nothing: it is answered with an error code before
  any transition (no epoch, vote, leader, high watermark or log change). Every check comes
  first; only then does a higher epoch move the node. Where Kafka throws (and its raft thread
  dies) or transitions before it refuses, fencer refuses without a change; docs/controller/decisions.md
  has the table of requests, states and answers.
- Every request first has its cluster id checked (INCONSISTENT_CLUSTER_ID when given and not
  this cluster's). Vote, BeginQuorumEpoch and EndQuorumEpoch are voter-only: an epoch older
  than the node's is FENCED_LEADER_EPOCH; a sender id below 0, the node's own id (a node never
  asks itself) or an epoch above `MAX_EPOCH` is INVALID_REQUEST; a sender that is not a voter,
  or a node that is not one, INCONSISTENT_VOTER_SET (the static voter set); a request meant for
  another voter id, INVALID_VOTER_KEY (checked before the epoch moves: Kafka moves first). A
  BeginQuorumEpoch or EndQuorumEpoch naming a leader that contradicts the node's view (another
  leader of the epoch it knows a leader of, itself included) is INVALID_REQUEST: two leaders of
  one epoch cannot both be real (Kafka throws). Fetch and FetchSnapshot are leader-only: an
  older epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, a non-leader
  NOT_LEADER_OR_FOLLOWER; a Fetch naming the leader's own replica id is INVALID_REQUEST (Kafka
  throws), a FetchSnapshot at a negative position POSITION_OUT_OF_RANGE (the shell answers one
  past the snapshot's end likewise). Every answer names the epoch and leader this node knows,
  after the request moved it (a higher epoch in a request is followed before answering).
- Vote (KIP-595, KIP-996): granted when the candidate's log (last epoch, end offset) is at least
  as up to date as this node's and, for a standard vote, when this node has not voted in the
  epoch, or voted for that candidate, and knows no leader in it; the vote is persisted before
  the answer (the `PersistQuorumState` action precedes the response). A repeated request from
  the candidate it voted for is checked against the log again, as Raft does (Kafka grants it
  again unchecked; the simulation saw a voter whose log had grown since under the epoch's
  leader do so: harmless, that candidate cannot win, but not a vote to give). A pre-vote changes
  nothing: Unattached, Prospective and Candidate grant it on the log check alone; a Follower
  only if it has not fetched successfully from its leader in this epoch (once it has, it refuses
  until its fetch timeout makes it Prospective); a Leader and a Resigned node never grant.
- Fetch: the leader checks the fetcher's (offset, last fetched epoch) against its log
  (`LogView.check_fetch`): a diverging epoch or a snapshot id, or valid, which records the
  fetcher's progress (a voter's moves the high watermark and check-quorum) and points the shell
  at the records from the fetch offset. A valid fetch with nothing new (no records, and a high
  watermark the fetcher has, or that it did not say and this fetch did not move) is held until
  records or a new high watermark come, or up to its max wait (Kafka's fetch purgatory).
- FetchSnapshot: the leader's snapshot, if it is the one asked for (SNAPSHOT_NOT_FOUND else: a
  node keeps its latest snapshot only, where Kafka serves any it retains); it counts for
  check-quorum. The bytes are the shell's.
- EndQuorumEpoch: a follower of the resigning leader shortens its fetch timeout by its place
  among the preferred successors (Kafka's strict exponential backoff: 0 for the first).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from protocol.error_codes import ErrorCode

from . import transitions
from .ids import MAX_EPOCH, Epoch, NodeId, OffsetAndEpoch
from .leader import Leader
from .messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Request,
    Response,
    VoteRequest,
    VoteResponse,
)
from .state import Candidate, Follower, Prospective, Unattached

if TYPE_CHECKING:
    from .node import QuorumState, RaftNode


def answer(node: RaftNode, now_ms: int, source: NodeId, correlation_id: int, request: Request) -> Response | None:
    """The response to `request`, or None when a Fetch is held (answered later)."""
    if isinstance(request, VoteRequest):
        return vote(node, now_ms, request)
    if isinstance(request, BeginQuorumEpochRequest):
        return begin_quorum_epoch(node, now_ms, request)
    if isinstance(request, EndQuorumEpochRequest):
        return end_quorum_epoch(node, now_ms, request)
    if isinstance(request, FetchRequest):
        return fetch(node, now_ms, source, correlation_id, request)
    return fetch_snapshot(node, now_ms, request)


def _cluster_ok(node: RaftNode, cluster_id: str | None) -> bool:
    return cluster_id is None or cluster_id == node.config.cluster_id


def _voter_only_error(
    node: RaftNode, remote_id: NodeId, epoch: Epoch, voter_id: NodeId | None = None
) -> ErrorCode | None:
    """Kafka's `validateVoterOnlyRequest`, and what fencer refuses beyond it, before any change."""
    if epoch < node.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if remote_id < 0 or remote_id == node.node_id or epoch > MAX_EPOCH:
        return ErrorCode.INVALID_REQUEST
    if not node.config.is_voter or remote_id not in node.config.voters:
        return ErrorCode.INCONSISTENT_VOTER_SET
    if voter_id is not None and not _meant_for(node, voter_id):
        return ErrorCode.INVALID_VOTER_KEY
    return None


def _leader_claim_error(node: RaftNode, leader_id: NodeId, epoch: Epoch) -> ErrorCode | None:
    """A BeginQuorumEpoch's or EndQuorumEpoch's leader, checked like `_voter_only_error`, then
    against the leader this node knows for that epoch."""
    error = _voter_only_error(node, leader_id, epoch)
    if error is None and not node.consistent(leader_id, epoch):
        return ErrorCode.INVALID_REQUEST
    return error


def _leader_only_error(node: RaftNode, epoch: int) -> ErrorCode | None:
    if epoch < node.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if epoch > node.epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if not node.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return None


def _meant_for(node: RaftNode, voter_id: NodeId) -> bool:
    return voter_id < 0 or voter_id == node.node_id


# ---------------------------------------------------------------------- Vote
def vote(node: RaftNode, now_ms: int, request: VoteRequest) -> VoteResponse:
    def answer(error: ErrorCode, granted: bool = False) -> VoteResponse:
        return VoteResponse(error, node.leader_id, node.epoch, granted)

    if not _cluster_ok(node, request.cluster_id):
        return answer(ErrorCode.INCONSISTENT_CLUSTER_ID)
    last_epoch, candidate_epoch = request.last_offset_epoch, request.candidate_epoch
    illegal_epoch = last_epoch > candidate_epoch if request.pre_vote else last_epoch >= candidate_epoch
    if request.last_offset < 0 or last_epoch < 0 or illegal_epoch:
        return answer(ErrorCode.INVALID_REQUEST)
    error = _voter_only_error(node, request.candidate_id, candidate_epoch, request.voter_id)
    if error is not None:
        return answer(error)
    if candidate_epoch > node.epoch:
        transitions.to_unattached(node, candidate_epoch, None, now_ms)
    up_to_date = OffsetAndEpoch(request.last_offset, last_epoch).at_least(node.log.end)
    granted = can_grant(node.state, request.candidate_id, up_to_date, request.pre_vote)
    state = node.state
    if granted and not request.pre_vote and isinstance(state, Unattached | Prospective) and state.voted_id is None:
        transitions.add_vote(node, request.candidate_id, now_ms)
    return answer(ErrorCode.NONE, granted)


def can_grant(state: QuorumState, candidate_id: NodeId, up_to_date: bool, pre_vote: bool) -> bool:
    """Whether a node in `state` grants a (pre-)vote (Kafka's `EpochState.canGrantVote`)."""
    if isinstance(state, Unattached | Prospective):
        if pre_vote or not up_to_date:
            return up_to_date
        if state.voted_id is not None:
            return state.voted_id == candidate_id
        return state.leader_id is None
    if isinstance(state, Candidate):
        return pre_vote and up_to_date
    if isinstance(state, Follower):
        return pre_vote and not state.has_fetched and up_to_date
    return False  # a Leader, a Resigned node


# ---------------------------------------------------------------------- Begin/EndQuorumEpoch
def begin_quorum_epoch(node: RaftNode, now_ms: int, request: BeginQuorumEpochRequest) -> BeginQuorumEpochResponse:
    if not _cluster_ok(node, request.cluster_id):
        return BeginQuorumEpochResponse(ErrorCode.INCONSISTENT_CLUSTER_ID, node.leader_id, node.epoch)
    error = _leader_claim_error(node, request.leader_id, request.leader_epoch)
    if error is None and not _meant_for(node, request.voter_id):
        error = ErrorCode.INVALID_VOTER_KEY
    if error is None:
        transitions.maybe_transition(node, request.leader_id, request.leader_epoch, now_ms)
    return BeginQuorumEpochResponse(error or ErrorCode.NONE, node.leader_id, node.epoch)


def end_quorum_epoch(node: RaftNode, now_ms: int, request: EndQuorumEpochRequest) -> EndQuorumEpochResponse:
    if not _cluster_ok(node, request.cluster_id):
        return EndQuorumEpochResponse(ErrorCode.INCONSISTENT_CLUSTER_ID, node.leader_id, node.epoch)
    error = _leader_claim_error(node, request.leader_id, request.leader_epoch)
    if error is not None:
        return EndQuorumEpochResponse(error, node.leader_id, node.epoch)
    transitions.maybe_transition(node, request.leader_id, request.leader_epoch, now_ms)
    state = node.state
    if isinstance(state, Follower) and state.leader_id == request.leader_id:
        backoff = end_epoch_backoff_ms(node, request.preferred_successors)
        node.state = replace(state, fetch_deadline_ms=now_ms + backoff)
    return EndQuorumEpochResponse(ErrorCode.NONE, node.leader_id, node.epoch)


def end_epoch_backoff_ms(node: RaftNode, successors: tuple[NodeId, ...]) -> int:
    """Kafka's `strictExponentialElectionBackoffMs`: the first successor starts at once, the
    next after max >> (n - 1), doubling; a node not among them waits the maximum."""
    maximum = node.config.election_backoff_max_ms
    position = successors.index(node.node_id) if node.node_id in successors else len(successors)
    if position == 0:
        return 0
    if position >= len(successors):
        return maximum
    return min(maximum, (maximum >> (len(successors) - 1)) << (position - 1))


# ---------------------------------------------------------------------- Fetch, FetchSnapshot
def fetch(
    node: RaftNode, now_ms: int, source: NodeId, correlation_id: int, request: FetchRequest
) -> FetchResponse | None:
    if not _cluster_ok(node, request.cluster_id):
        return FetchResponse(ErrorCode.INCONSISTENT_CLUSTER_ID, node.leader_id, node.epoch)
    if (
        request.max_wait_ms < 0
        or request.fetch_offset < 0
        or request.last_fetched_epoch < 0
        or request.last_fetched_epoch > request.current_leader_epoch
    ):
        return FetchResponse(ErrorCode.INVALID_REQUEST, node.leader_id, node.epoch)
    error = _leader_only_error(node, request.current_leader_epoch)
    if error is None and request.replica_id == node.node_id:
        error = ErrorCode.INVALID_REQUEST
    if error is not None:
        return FetchResponse(error, node.leader_id, node.epoch)
    before = node.high_watermark
    response = fetch_from_leader(node, now_ms, request)
    if (
        request.max_wait_ms == 0
        or node.high_watermark != before  # this fetch moved it: the fetcher should know at once
        or response.records_from_offset is not None
        or response.diverging_epoch is not None
        or response.snapshot_id is not None
        or 0 <= request.high_watermark < response.high_watermark
    ):
        return response
    node.park(source, correlation_id, request, now_ms)
    return None


def fetch_from_leader(
    node: RaftNode, now_ms: int, request: FetchRequest, fetched_ms: int | None = None
) -> FetchResponse:
    """Kafka's `tryCompleteFetchRequest`: the leader's answer to a valid Fetch of its epoch, at
    `now_ms`; the replica's progress is stamped `fetched_ms`, when the fetch arrived (a held one
    arrived earlier)."""
    fetched_at = now_ms if fetched_ms is None else fetched_ms
    leader = node.state
    assert isinstance(leader, Leader)
    log = node.log
    check = log.check_fetch(request.fetch_offset, request.last_fetched_epoch)
    records_from = None
    if check.kind == "valid":
        replica = request.replica_id
        if replica >= 0 and replica != node.node_id:
            leader = leader.fetched(replica, request.fetch_offset, log.end_offset, fetched_at)
            node.state = leader.voter_followed(replica, fetched_at, node.config.fetch_timeout_ms)
            if replica in leader.voters:
                node.leader_update_high_watermark(now_ms)
        if request.fetch_offset < log.flushed_end_offset:  # what is on disk: the shell reads it from there
            records_from = request.fetch_offset
    hw = node.state.high_watermark if isinstance(node.state, Leader) else None
    return FetchResponse(
        ErrorCode.NONE,
        node.node_id,
        node.epoch,
        high_watermark=-1 if hw is None else hw,
        log_start_offset=log.start_offset,
        diverging_epoch=check.offset_and_epoch if check.kind == "diverging" else None,
        snapshot_id=check.offset_and_epoch if check.kind == "snapshot" else None,
        records_from_offset=records_from,
    )


def fetch_snapshot(node: RaftNode, now_ms: int, request: FetchSnapshotRequest) -> FetchSnapshotResponse:
    def answer(error: ErrorCode, snapshot_id: OffsetAndEpoch | None = None) -> FetchSnapshotResponse:
        return FetchSnapshotResponse(error, node.leader_id, node.epoch, snapshot_id)

    if not _cluster_ok(node, request.cluster_id):
        return answer(ErrorCode.INCONSISTENT_CLUSTER_ID)
    error = _leader_only_error(node, request.current_leader_epoch)
    if error is not None:
        return answer(error)
    if node.log.snapshot is None or node.log.snapshot != request.snapshot_id:
        return answer(ErrorCode.SNAPSHOT_NOT_FOUND)
    if request.position < 0:
        return answer(ErrorCode.POSITION_OUT_OF_RANGE)
    leader = node.state
    assert isinstance(leader, Leader)
    node.state = leader.voter_followed(request.replica_id, now_ms, node.config.fetch_timeout_ms)
    return answer(ErrorCode.NONE, request.snapshot_id)
