"""What a Raft node does when polled (Kafka's `KafkaRaftClient.poll*`): its timers, then what is
due to be sent. Run after every event and tick.

Rules:
- Leader: resigns when check-quorum expires; answers the held fetches past their wait; sends
  BeginQuorumEpoch to the voters that have not acknowledged it, every half fetch timeout.
- Candidate and Prospective: at the election timeout, a candidate becomes Prospective again
  and a prospective gives up (to its known leader, else Unattached); until then they ask every
  voter that has not answered, as long as they can still win.
- Follower: at the fetch timeout, a voter becomes Prospective, an observer Unattached; until
  then one Fetch (or FetchSnapshot) at a time to the leader, once the log is flushed, and none
  while a snapshot is being installed.
- Unattached: a voter becomes Prospective at its election timeout; an observer fetches from a
  random voter to find the leader (Kafka's bootstrap fetch). A voter does not (Kafka's does):
  against voters that know no leader it is a loop at network speed, and a voter learns the
  leader from BeginQuorumEpoch or from its own pre-vote's answers anyway.
- Resigned: EndQuorumEpoch to the voters that have not acknowledged it; at its election
  timeout, Unattached in the next epoch (Kafka 4.0).
- A transition to another state polls again at once (the new state may have something to send).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from . import transitions
from .ids import MAX_EPOCH, Epoch, NodeId
from .leader import Leader
from .messages import BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchSnapshotRequest, VoteRequest
from .state import Candidate, Follower, Prospective, Unattached

if TYPE_CHECKING:
    from .node import RaftNode

#: transitions chained in one poll at most (Follower -> Prospective -> Candidate -> Leader is 3)
MAX_POLL_ROUNDS = 8


def poll(node: RaftNode, now_ms: int) -> None:
    for _ in range(MAX_POLL_ROUNDS):
        before = node.state
        _poll_once(node, now_ms)
        # another state (not an update of this one) may have something to send at once
        if type(node.state) is type(before) and node.state.epoch == before.epoch:
            return


def _poll_once(node: RaftNode, now_ms: int) -> None:
    state = node.state
    if isinstance(state, Leader):
        _leader(node, state, now_ms)
    elif isinstance(state, Candidate | Prospective):
        if now_ms >= state.election_deadline_ms:
            if isinstance(state, Candidate):
                transitions.to_prospective(node, now_ms)
            else:
                transitions.after_prospective_loss(node, now_ms)
        elif not state.tally.lost:
            for voter in sorted(state.tally.unrecorded):
                node.send(voter, _vote_request(node, voter), now_ms)
    elif isinstance(state, Follower):
        _follower(node, state, now_ms)
    elif isinstance(state, Unattached):
        deadline = state.election_deadline_ms
        if node.config.is_voter and deadline is not None and now_ms >= deadline:
            transitions.to_prospective(node, now_ms)
        elif not node.config.is_voter and not node.in_flight.any_in_flight(now_ms):
            voters = sorted(node.config.voters)
            send_fetch(node, voters[node.rng.randrange(len(voters))], now_ms)
    else:
        for voter in sorted(state.unacknowledged):
            request = EndQuorumEpochRequest(
                node.config.cluster_id, node.node_id, state.epoch, state.preferred_successors
            )
            node.send(voter, request, now_ms)
        if now_ms >= state.election_deadline_ms:
            if state.epoch < MAX_EPOCH:
                transitions.to_unattached(node, Epoch(state.epoch + 1), None, now_ms)
            else:  # no epoch after it: stand in vain, as a node in MAX_EPOCH does
                transitions.to_prospective(node, now_ms)


def _leader(node: RaftNode, state: Leader, now_ms: int) -> None:
    if state.check_quorum_expired(now_ms):
        transitions.to_resigned(node, now_ms)
        return
    node.complete_parked(now_ms, only_expired=True)
    current = node.state
    assert isinstance(current, Leader)
    if current.unacknowledged and now_ms >= current.begin_epoch_due_ms:
        for voter in sorted(current.unacknowledged):
            request = BeginQuorumEpochRequest(node.config.cluster_id, node.node_id, current.epoch, voter)
            node.send(voter, request, now_ms)
        node.state = replace(current, begin_epoch_due_ms=now_ms + node.config.fetch_timeout_ms // 2)


def _follower(node: RaftNode, state: Follower, now_ms: int) -> None:
    if now_ms >= state.fetch_deadline_ms:
        if node.config.is_voter:
            transitions.to_prospective(node, now_ms)
        else:
            transitions.to_unattached(node, state.epoch, state.leader_id, now_ms)
    elif node.in_flight.is_ready(state.leader_id, now_ms):
        if state.fetching_snapshot is not None:
            request = FetchSnapshotRequest(node.config.cluster_id, node.node_id, state.epoch, state.fetching_snapshot)
            node.send(state.leader_id, request, now_ms)
        else:
            send_fetch(node, state.leader_id, now_ms)


def send_fetch(node: RaftNode, destination: NodeId, now_ms: int) -> None:
    """Fetch from the log end, once it is flushed: the leader counts a voter's fetch offset as
    durable there (Kafka's follower flushes before it fetches again); not while a snapshot is
    being installed (the log is being replaced)."""
    log = node.log
    if log.flushed_end_offset < log.end_offset or node.installing_snapshot is not None:
        return
    request = FetchRequest(
        node.config.cluster_id,
        node.node_id,
        node.epoch,
        log.end_offset,
        log.last_epoch,
        -1 if node.high_watermark is None else node.high_watermark,
        node.config.fetch_max_wait_ms,
    )
    node.send(destination, request, now_ms)


def _vote_request(node: RaftNode, voter: NodeId) -> VoteRequest:
    log = node.log
    pre_vote = isinstance(node.state, Prospective)
    return VoteRequest(
        node.config.cluster_id, node.epoch, node.node_id, voter, log.last_epoch, log.end_offset, pre_vote
    )
