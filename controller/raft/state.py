"""The Raft core's states (Kafka's `EpochState`s held by `QuorumState`) and what of them is persisted.

Rules:
- `ElectionState` is the quorum-state file's content (Kafka's `ElectionState`: epoch, leader id,
  voted id). Unattached, Follower, Candidate and Leader are persisted when entered (when the file
  would change); Prospective and Resigned are soft (Kafka's `memoryTransitionTo`): a prospective
  keeps the epoch, leader and vote it had, and a resigned leader is restarted as resigned from
  its own persisted leadership.
- States are values: a transition or an update replaces the state. Deadlines are absolute
  monotonic milliseconds; a `None` election deadline never expires (an observer's).
- `Tally` is Kafka's `EpochElection`: the voters that granted or rejected this node's (pre-)vote
  requests; a majority of grants wins, and the election is lost once a majority can no longer
  grant.
- `Unattached`, `Prospective`, `Candidate`, `Follower`, `Resigned`: as Kafka's states of those
  names. The leader's state is in `controller.raft.leader`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .ids import Epoch, NodeId, OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class ElectionState:
    epoch: Epoch
    leader_id: NodeId | None = None
    voted_id: NodeId | None = None


@dataclass(frozen=True, slots=True)
class Tally:
    voters: frozenset[NodeId]
    granted: frozenset[NodeId] = frozenset()
    rejected: frozenset[NodeId] = frozenset()

    @classmethod
    def started(cls, voters: frozenset[NodeId], local_id: NodeId) -> Tally:
        return cls(voters, frozenset({local_id}))

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def won(self) -> bool:
        return len(self.granted) >= self.majority

    @property
    def lost(self) -> bool:
        return len(self.voters) - len(self.rejected) < self.majority

    @property
    def unrecorded(self) -> frozenset[NodeId]:
        return self.voters - self.granted - self.rejected

    def record(self, voter: NodeId, granted: bool) -> Tally:
        """The first answer of each voter counts (a duplicate or a late one changes nothing)."""
        if voter not in self.unrecorded:
            return self
        if granted:
            return replace(self, granted=self.granted | {voter})
        return replace(self, rejected=self.rejected | {voter})


@dataclass(frozen=True, slots=True)
class Unattached:
    """No leader known in this epoch, or a leader known but not followed (an observer whose
    fetches timed out); possibly with this node's vote cast (Kafka's Voted)."""

    epoch: Epoch
    leader_id: NodeId | None
    voted_id: NodeId | None
    election_deadline_ms: int | None


@dataclass(frozen=True, slots=True)
class Prospective:
    """A pre-vote (KIP-996): asks the voters whether it could win, without bumping the epoch."""

    epoch: Epoch
    leader_id: NodeId | None
    voted_id: NodeId | None
    election_deadline_ms: int
    tally: Tally


@dataclass(frozen=True, slots=True)
class Candidate:
    """Stands in its epoch (it voted for itself) and asks for votes."""

    epoch: Epoch
    election_deadline_ms: int
    tally: Tally


@dataclass(frozen=True, slots=True)
class Follower:
    epoch: Epoch
    leader_id: NodeId
    voted_id: NodeId | None
    fetch_deadline_ms: int
    #: fetched successfully from the leader in this epoch (then it refuses pre-votes: KIP-996)
    has_fetched: bool = False
    #: the snapshot the leader named (FetchSnapshot until it is downloaded)
    fetching_snapshot: OffsetAndEpoch | None = None


@dataclass(frozen=True, slots=True)
class Resigned:
    """A leader that gave up its epoch: it votes for nobody in it, tells the voters
    (EndQuorumEpoch until each acknowledges), and moves to the next epoch when its election
    timeout expires."""

    epoch: Epoch
    election_deadline_ms: int
    unacknowledged: frozenset[NodeId]
    preferred_successors: tuple[NodeId, ...]


class RaftError(RuntimeError):
    """A broken invariant (two leaders in one epoch, a truncation below the high watermark, ...):
    the node must stop, as Kafka's raft thread does on an IllegalStateException."""
