"""The Raft node's state transitions (Kafka's `QuorumState`): the only way its election state
changes, each persisted before anything that depends on it is sent.

Rules:
- Start-up (`recovered_state`) is Kafka's `QuorumState.initialize`, from what was recovered (the
  quorum-state file's content, the flushed log): a node that led its persisted epoch starts
  Resigned in it (it must neither vote in that epoch nor write new records in it: its unflushed
  records may be gone), one that voted for itself starts as a Candidate of the same epoch, an
  epoch older than the log's last is replaced by the log's (Unattached), else Follower or
  Unattached as persisted.
- Elections follow Kafka 4.0 (KIP-996): a voter whose election timeout (Unattached) or fetch
  timeout (Follower) expires becomes Prospective and sends pre-votes in its current epoch; with
  a majority it becomes a Candidate of the next epoch (persisted, voting for itself); with a
  majority of votes, the Leader. A candidate that loses waits out its election timeout, then
  becomes Prospective again; a prospective that loses (or times out) goes back to following its
  known leader, else to Unattached in its epoch. The randomised timeouts (uniform in [T, 2T),
  from the node's `random.Random`) are the backoff: 4.0 dropped 3.9's binary exponential
  election backoff with Prospective.
- A higher epoch seen in any request or response moves the node to that epoch (Follower when the
  leader is named, else Unattached: `maybe_transition`), persisted before anything is sent. The
  callers check `RaftNode.consistent` first: a message naming another leader for the node's own
  epoch, or this node as leader when it is not, is never followed. The node never enters an
  epoch above `MAX_EPOCH`: in that epoch it does not stand.
- Every transition (`enter`) emits, in order: `PersistQuorumState` when the persisted election
  changed (durable transitions only: Prospective and Resigned are not persisted), forgets the
  requests in flight (unless it only records a vote), `StopLeading` and NOT_LEADER_OR_FOLLOWER
  answers to the held fetches when a leader leaves its epoch, and `LeaderChanged` when the epoch
  or the known leader changed. A new leader appends its LeaderChange batch at once.
- A transition that is not allowed from the current state raises `RaftError` (a bug: the node's
  `handle` puts the node back as it was before the event).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .actions import BecomeLeader, LeaderChanged, LeaderChangeRecord, PersistQuorumState, StopLeading
from .ids import MAX_EPOCH, Epoch, NodeId
from .leader import Leader
from .messages import Batch
from .state import Candidate, ElectionState, Follower, Prospective, RaftError, Resigned, Tally, Unattached

if TYPE_CHECKING:
    from .node import QuorumState, RaftNode


def enter(node: RaftNode, state: QuorumState, *, durable: bool, reset: bool = True) -> None:
    was_leader = node.state if isinstance(node.state, Leader) else None
    before = (node.epoch, node.leader_id)
    node.state = state
    if durable and node.election() != node.persisted:
        node.persisted = node.election()
        node.out.append(PersistQuorumState(node.persisted))
    if reset:
        node.in_flight.reset_all()
    if was_leader is not None and not isinstance(state, Leader):
        node.out.append(StopLeading(was_leader.epoch))
        node.answer_parked_not_leader()
    if (node.epoch, node.leader_id) != before:
        node.out.append(LeaderChanged(node.epoch, node.leader_id))


def random_election_timeout_ms(node: RaftNode) -> int:
    timeout = node.config.election_timeout_ms
    return timeout + node.rng.randrange(timeout)


def recovered_state(node: RaftNode, now_ms: int) -> QuorumState:
    election = node.persisted if node.persisted is not None else ElectionState(Epoch(0))
    voter = node.config.is_voter
    deadline = now_ms + random_election_timeout_ms(node) if voter else None
    if election.epoch < node.log.last_epoch:
        return Unattached(node.log.last_epoch, None, None, deadline)
    if voter and election.leader_id == node.node_id:
        others = frozenset(node.config.other_voters)
        return Resigned(election.epoch, now_ms + random_election_timeout_ms(node), others, ())
    if voter and election.voted_id == node.node_id:
        tally = Tally.started(node.config.voters, node.node_id)
        return Candidate(election.epoch, now_ms + random_election_timeout_ms(node), tally)
    if election.leader_id is not None and election.leader_id != node.node_id:
        return Follower(election.epoch, election.leader_id, election.voted_id, now_ms + node.config.fetch_timeout_ms)
    return Unattached(election.epoch, None, election.voted_id, deadline)


def to_unattached(node: RaftNode, epoch: Epoch, leader_id: NodeId | None, now_ms: int) -> None:
    """Kafka's `transitionToUnattached`: a higher epoch, or the same one from Prospective."""
    state = node.state
    same_epoch_allowed = isinstance(state, Prospective) or not node.config.is_voter
    if epoch < node.epoch or (epoch == node.epoch and not same_epoch_allowed):
        raise RaftError(f"cannot become unattached in epoch {epoch} from {state}")
    deadline: int | None
    if not node.config.is_voter:
        deadline = None
    elif isinstance(state, Candidate | Unattached | Resigned) or (
        isinstance(state, Prospective) and not state.tally.lost
    ):
        deadline = state.election_deadline_ms  # the election timeout keeps running
    else:
        deadline = now_ms + random_election_timeout_ms(node)
    voted = node.voted_id if epoch == node.epoch else None
    enter(node, Unattached(epoch, leader_id, voted, deadline), durable=True)


def add_vote(node: RaftNode, candidate_id: NodeId, now_ms: int) -> None:
    """Grant this epoch's vote (Unattached or Prospective without one), persisted; the
    election timeout restarts (the candidate has as good a chance as this node). A
    prospective keeps the pre-votes it has tallied (Kafka starts a new tally)."""
    state = node.state
    if not isinstance(state, Unattached | Prospective) or state.voted_id is not None:
        raise RaftError(f"cannot vote for {candidate_id} in {state}")
    deadline = now_ms + random_election_timeout_ms(node)
    enter(node, replace(state, voted_id=candidate_id, election_deadline_ms=deadline), durable=True, reset=False)


def to_follower(node: RaftNode, epoch: Epoch, leader_id: NodeId, now_ms: int) -> None:
    state = node.state
    if leader_id == node.node_id or epoch < node.epoch:
        raise RaftError(f"cannot follow {leader_id} in epoch {epoch} from {state}")
    if epoch == node.epoch and isinstance(state, Leader | Follower):
        raise RaftError(f"cannot follow {leader_id} in epoch {epoch} from {state}")
    voted = node.voted_id if epoch == node.epoch else None
    enter(node, Follower(epoch, leader_id, voted, now_ms + node.config.fetch_timeout_ms), durable=True)


def to_prospective(node: RaftNode, now_ms: int) -> None:
    if not node.config.is_voter or isinstance(node.state, Leader | Prospective):
        raise RaftError(f"cannot become prospective from {node.state}")
    leader = node.leader_id if node.leader_id != node.node_id else None
    tally = Tally.started(node.config.voters, node.node_id)
    deadline = now_ms + random_election_timeout_ms(node)
    enter(node, Prospective(node.epoch, leader, node.voted_id, deadline, tally), durable=False)
    if tally.won:
        to_candidate(node, now_ms)


def to_candidate(node: RaftNode, now_ms: int) -> None:
    if not isinstance(node.state, Prospective):
        raise RaftError(f"only a prospective becomes a candidate, not {node.state}")
    if node.epoch >= MAX_EPOCH:
        return  # the epochs are spent: the prospective loses at its election timeout
    tally = Tally.started(node.config.voters, node.node_id)
    deadline = now_ms + random_election_timeout_ms(node)
    enter(node, Candidate(Epoch(node.epoch + 1), deadline, tally), durable=True)
    if tally.won:
        to_leader(node, now_ms)


def to_leader(node: RaftNode, now_ms: int) -> None:
    state = node.state
    if not isinstance(state, Candidate) or not state.tally.won:
        raise RaftError(f"cannot lead from {state}")
    start = node.log.end_offset
    leader = Leader.started(
        state.epoch,
        node.node_id,
        node.config.voters,
        start,
        state.tally.granted,
        now_ms,
        node.config.fetch_timeout_ms,
    )
    enter(node, leader, durable=True)
    node.out.append(BecomeLeader(state.epoch, start))
    record = LeaderChangeRecord(node.node_id, tuple(sorted(node.config.voters)), tuple(sorted(state.tally.granted)))
    node.append_as_leader(Batch(start, start, state.epoch, record))


def to_resigned(node: RaftNode, now_ms: int) -> None:
    state = node.state
    if not isinstance(state, Leader):
        raise RaftError(f"only a leader resigns, not {state}")
    deadline = now_ms + random_election_timeout_ms(node)
    others = frozenset(node.config.other_voters)
    enter(node, Resigned(state.epoch, deadline, others, state.successors()), durable=False)


def after_prospective_loss(node: RaftNode, now_ms: int) -> None:
    state = node.state
    assert isinstance(state, Prospective)
    if state.leader_id is not None:
        to_follower(node, state.epoch, state.leader_id, now_ms)
    else:
        to_unattached(node, state.epoch, None, now_ms)


def maybe_transition(node: RaftNode, leader_id: NodeId | None, epoch: Epoch, now_ms: int) -> None:
    """Kafka's `maybeTransition`: follow a higher epoch, or the named leader of this one.
    The callers check `consistent` first (a contradiction is refused, never followed)."""
    if not node.consistent(leader_id, epoch) or epoch > MAX_EPOCH:
        raise RaftError(f"leader {leader_id} of epoch {epoch} contradicts {node.state}")
    if epoch > node.epoch:
        if leader_id is not None:
            to_follower(node, epoch, leader_id, now_ms)
        else:
            to_unattached(node, epoch, None, now_ms)
    elif leader_id is not None and node.leader_id is None:
        to_follower(node, epoch, leader_id, now_ms)
