"""One Raft node (Kafka's `KafkaRaftClient` + `QuorumState`), sans I/O.

Rules:
- Drive it with `handle(now_ms, event)` (see `controller.raft.events`) and `append(...)`, and
  tick it at `next_wakeup_ms(now_ms)` at the latest; each call returns the ordered actions of
  `controller.raft.actions`, to be executed in order. Nothing here reads a clock or a socket:
  time is `now_ms`, every random choice comes from the `random.Random` given to the node.
- Start-up is `RaftNode(config, rng, election, log)` with what was recovered (the quorum-state
  file's content, the flushed log), then `start(now_ms)`, as Kafka's `QuorumState.initialize`:
  a node that led its persisted epoch starts Resigned in it (it must neither vote in that epoch
  nor write new records in it: its unflushed records may be gone), one that voted for itself
  starts as a Candidate of the same epoch, an epoch older than the log's last is replaced by
  the log's (Unattached), else Follower or Unattached as persisted. A sole voter leads at once.
- Every call handles its event, then polls as Kafka's `poll()` does (`controller.raft.poll`):
  the state's timers (election timeout: uniform in [T, 2T); fetch timeout; check-quorum), then
  what is due to be sent. Each destination has at most one request in flight
  (`controller.raft.requests`).
- Elections follow Kafka 4.0 (KIP-996): a voter whose election timeout (Unattached) or fetch
  timeout (Follower) expires becomes Prospective and sends pre-votes in its current epoch; with
  a majority it becomes a Candidate of the next epoch (persisted, voting for itself); with a
  majority of votes, the Leader. A candidate that loses waits out its election timeout, then
  becomes Prospective again; a prospective that loses (or times out) goes back to following its
  known leader, else to Unattached in its epoch. The randomised timeouts are the backoff: 4.0
  dropped 3.9's binary exponential election backoff with Prospective.
- A higher epoch seen in any request or response moves the node to that epoch (Follower when the
  leader is named, else Unattached), persisted before anything is sent; a leader that leaves
  its epoch emits `StopLeading`. A message naming another leader for the node's own epoch, or
  this node as leader when it is not, is refused (a request) or ignored (an answer) without a
  change (`consistent`); Kafka throws, and its raft thread dies.
- No peer's message can stop the node: requests and answers are checked before they change
  anything (`controller.raft.inbound`, `controller.raft.outbound`), and if handling one still
  raises (a bug), `handle` puts the node back as it was before the event and re-raises, so the
  shell can refuse that one message and go on. The node never enters an epoch above
  `MAX_EPOCH`: in that epoch it does not stand.
- Requests are answered by `controller.raft.inbound`, responses read by
  `controller.raft.outbound`; they and `poll` change the node's state only through the
  transitions below (or by updating the current state's own fields).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from protocol.error_codes import ErrorCode

from . import inbound, outbound, poll
from .actions import (
    Action,
    AppendBatches,
    BecomeLeader,
    HighWatermark,
    LeaderChanged,
    LeaderChangeRecord,
    PersistQuorumState,
    SendRequest,
    SendResponse,
    StopLeading,
)
from .config import RaftConfig
from .events import (
    Event,
    LogFlushed,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SnapshotCreated,
    SnapshotInstalled,
    Tick,
)
from .ids import MAX_EPOCH, Epoch, NodeId, OffsetAndEpoch
from .leader import Leader
from .log import LogView
from .messages import (
    Batch,
    FetchRequest,
    FetchResponse,
    Request,
)
from .purgatory import Purgatory
from .requests import InFlight
from .state import Candidate, ElectionState, Follower, Prospective, RaftError, Resigned, Tally, Unattached

QuorumState = Unattached | Prospective | Candidate | Leader | Follower | Resigned


@dataclass(frozen=True, slots=True)
class Appended:
    """A leader's append: its batch (offsets and epoch), and the actions to run."""

    batch: Batch
    actions: tuple[Action, ...]


@dataclass(frozen=True, slots=True)
class NotLeader:
    """An append refused: this node does not lead that epoch (the controller answers
    NOT_CONTROLLER, naming the leader when known)."""

    epoch: Epoch
    leader_id: NodeId | None


class RaftNode:
    def __init__(
        self,
        config: RaftConfig,
        rng: random.Random,
        election: ElectionState | None = None,
        log: LogView | None = None,
    ) -> None:
        self.config = config
        self.rng = rng
        self.log = log if log is not None else LogView()
        #: the quorum-state file's content, as last persisted (None: no file)
        self.persisted = election
        self.state: QuorumState = Unattached(Epoch(0), None, None, None)
        #: the last high watermark emitted (grows only); None until known
        self.high_watermark: int | None = None
        self.in_flight = InFlight(config.retry_backoff_ms, config.request_timeout_ms)
        self.parked = Purgatory()
        #: the snapshot the shell is installing (whatever the state: no Fetch until it is done)
        self.installing_snapshot: OffsetAndEpoch | None = None
        self.out: list[Action] = []
        self._started = False

    # ------------------------------------------------------------------ what it is
    @property
    def node_id(self) -> NodeId:
        return self.config.node_id

    @property
    def epoch(self) -> Epoch:
        return self.state.epoch

    @property
    def leader_id(self) -> NodeId | None:
        state = self.state
        if isinstance(state, Leader | Resigned):
            return self.node_id
        if isinstance(state, Candidate):
            return None
        return state.leader_id

    @property
    def voted_id(self) -> NodeId | None:
        """The vote cast in this epoch as persisted: a candidate's for itself; none once it leads
        (Kafka's `ElectionState.withElectedLeader`: the quorum-state file of a leader says votedId
        -1, its leaderId being itself)."""
        state = self.state
        if isinstance(state, Candidate):
            return self.node_id
        if isinstance(state, Leader | Resigned):
            return None
        return state.voted_id

    @property
    def is_leader(self) -> bool:
        return isinstance(self.state, Leader)

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_id)

    # ------------------------------------------------------------------ the interface
    def start(self, now_ms: int) -> list[Action]:
        if self._started:
            raise RaftError("started twice")
        self._started = True
        self._enter(self._recovered_state(now_ms), durable=True)
        if self.config.voters == {self.node_id} and isinstance(self.state, Unattached | Follower | Resigned):
            self.to_prospective(now_ms)
        elif isinstance(self.state, Candidate) and self.state.tally.won:
            self.to_leader(now_ms)
        poll.poll(self, now_ms)
        return self._take()

    def handle(self, now_ms: int, event: Event) -> list[Action]:
        if not self._started:
            raise RaftError("handle before start")
        saved = self._save()
        try:
            self._handle(now_ms, event)
        except Exception:
            self._restore(saved)
            raise
        return self._take()

    def _handle(self, now_ms: int, event: Event) -> None:
        if isinstance(event, RequestReceived):
            response = inbound.answer(self, now_ms, event.source, event.correlation_id, event.request)
            if response is not None:
                self.out.append(SendResponse(event.source, event.correlation_id, response))
        elif isinstance(event, ResponseReceived):
            outbound.read(self, now_ms, event.source, event.correlation_id, event.response)
        elif isinstance(event, RequestFailed):
            self.in_flight.answered(event.destination, event.correlation_id, False, now_ms)
        elif isinstance(event, LogFlushed):
            readable = self.log.flushed_end_offset
            self.log = self.log.flushed(event.end_offset)
            self.leader_update_high_watermark(now_ms)
            if isinstance(self.state, Leader) and self.log.flushed_end_offset > readable:
                self.complete_parked(now_ms)  # the held fetches can have the new records now
        elif isinstance(event, SnapshotInstalled):
            self._snapshot_installed(now_ms, event)
        elif isinstance(event, SnapshotCreated):
            self._snapshot_created(event)
        else:
            assert isinstance(event, Tick)
        poll.poll(self, now_ms)

    def _save(self) -> tuple[object, ...]:
        return (
            self.state,
            self.log,
            self.persisted,
            self.high_watermark,
            self.installing_snapshot,
            self.parked.copy(),
            list(self.out),
            self.in_flight.copy(),
        )

    def _restore(self, saved: tuple[object, ...]) -> None:
        """Undo an event whose handling raised: every field as `_save` found it."""
        state, log, persisted, high_watermark, installing, parked, out, in_flight = saved
        self.state = state  # type: ignore[assignment]
        self.log = log  # type: ignore[assignment]
        self.persisted = persisted  # type: ignore[assignment]
        self.high_watermark = high_watermark  # type: ignore[assignment]
        self.installing_snapshot = installing  # type: ignore[assignment]
        self.parked = parked  # type: ignore[assignment]
        self.out = out  # type: ignore[assignment]
        self.in_flight = in_flight  # type: ignore[assignment]

    def append(self, now_ms: int, epoch: int, record_count: int, payload: object = None) -> Appended | NotLeader:
        """Append one batch of `record_count` records as the leader of `epoch` (Kafka's
        `prepareAppend` + drain): its offsets, or NotLeader."""
        state = self.state
        if not isinstance(state, Leader) or epoch != state.epoch:
            return NotLeader(self.epoch, self.leader_id)
        if record_count < 1:
            raise ValueError("a batch holds at least one record")
        base = self.log.end_offset
        batch = Batch(base, base + record_count - 1, state.epoch, payload)
        self._append_as_leader(batch, now_ms)
        return Appended(batch, tuple(self._take()))

    def next_wakeup_ms(self, now_ms: int) -> int | None:
        """When the node must be ticked at the latest (None: only events can change it)."""
        state = self.state
        times: list[int | None] = [self.in_flight.next_change_ms(now_ms)]
        if isinstance(state, Leader):
            if len(state.voters) > 1:
                times.append(state.check_quorum_deadline_ms)
            if state.unacknowledged:
                times.append(state.begin_epoch_due_ms)
            times.extend(self.parked.deadlines())
        elif isinstance(state, Follower):
            times.append(state.fetch_deadline_ms)
        else:
            times.append(state.election_deadline_ms)
        return min((time for time in times if time is not None), default=None)

    # ------------------------------------------------------------------ transitions
    def _enter(self, state: QuorumState, *, durable: bool, reset: bool = True) -> None:
        was_leader = self.state if isinstance(self.state, Leader) else None
        before = (self.epoch, self.leader_id)
        self.state = state
        if durable and self.election() != self.persisted:
            self.persisted = self.election()
            self.out.append(PersistQuorumState(self.persisted))
        if reset:
            self.in_flight.reset_all()
        if was_leader is not None and not isinstance(state, Leader):
            self.out.append(StopLeading(was_leader.epoch))
            self._answer_parked_not_leader()
        if (self.epoch, self.leader_id) != before:
            self.out.append(LeaderChanged(self.epoch, self.leader_id))

    def _random_election_timeout_ms(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self.rng.randrange(timeout)

    def _recovered_state(self, now_ms: int) -> QuorumState:
        election = self.persisted if self.persisted is not None else ElectionState(Epoch(0))
        voter = self.config.is_voter
        deadline = now_ms + self._random_election_timeout_ms() if voter else None
        if election.epoch < self.log.last_epoch:
            return Unattached(self.log.last_epoch, None, None, deadline)
        if voter and election.leader_id == self.node_id:
            others = frozenset(self.config.other_voters)
            return Resigned(election.epoch, now_ms + self._random_election_timeout_ms(), others, ())
        if voter and election.voted_id == self.node_id:
            tally = Tally.started(self.config.voters, self.node_id)
            return Candidate(election.epoch, now_ms + self._random_election_timeout_ms(), tally)
        if election.leader_id is not None and election.leader_id != self.node_id:
            return Follower(
                election.epoch, election.leader_id, election.voted_id, now_ms + self.config.fetch_timeout_ms
            )
        return Unattached(election.epoch, None, election.voted_id, deadline)

    def to_unattached(self, epoch: Epoch, leader_id: NodeId | None, now_ms: int) -> None:
        """Kafka's `transitionToUnattached`: a higher epoch, or the same one from Prospective."""
        state = self.state
        same_epoch_allowed = isinstance(state, Prospective) or not self.config.is_voter
        if epoch < self.epoch or (epoch == self.epoch and not same_epoch_allowed):
            raise RaftError(f"cannot become unattached in epoch {epoch} from {state}")
        deadline: int | None
        if not self.config.is_voter:
            deadline = None
        elif isinstance(state, Candidate | Unattached | Resigned) or (
            isinstance(state, Prospective) and not state.tally.lost
        ):
            deadline = state.election_deadline_ms  # the election timeout keeps running
        else:
            deadline = now_ms + self._random_election_timeout_ms()
        voted = self.voted_id if epoch == self.epoch else None
        self._enter(Unattached(epoch, leader_id, voted, deadline), durable=True)

    def add_vote(self, candidate_id: NodeId, now_ms: int) -> None:
        """Grant this epoch's vote (Unattached or Prospective without one), persisted; the
        election timeout restarts (the candidate has as good a chance as this node). A
        prospective keeps the pre-votes it has tallied (Kafka starts a new tally)."""
        state = self.state
        if not isinstance(state, Unattached | Prospective) or state.voted_id is not None:
            raise RaftError(f"cannot vote for {candidate_id} in {state}")
        deadline = now_ms + self._random_election_timeout_ms()
        self._enter(replace(state, voted_id=candidate_id, election_deadline_ms=deadline), durable=True, reset=False)

    def to_follower(self, epoch: Epoch, leader_id: NodeId, now_ms: int) -> None:
        state = self.state
        if leader_id == self.node_id or epoch < self.epoch:
            raise RaftError(f"cannot follow {leader_id} in epoch {epoch} from {state}")
        if epoch == self.epoch and isinstance(state, Leader | Follower):
            raise RaftError(f"cannot follow {leader_id} in epoch {epoch} from {state}")
        voted = self.voted_id if epoch == self.epoch else None
        self._enter(Follower(epoch, leader_id, voted, now_ms + self.config.fetch_timeout_ms), durable=True)

    def to_prospective(self, now_ms: int) -> None:
        if not self.config.is_voter or isinstance(self.state, Leader | Prospective):
            raise RaftError(f"cannot become prospective from {self.state}")
        leader = self.leader_id if self.leader_id != self.node_id else None
        tally = Tally.started(self.config.voters, self.node_id)
        deadline = now_ms + self._random_election_timeout_ms()
        self._enter(Prospective(self.epoch, leader, self.voted_id, deadline, tally), durable=False)
        if tally.won:
            self.to_candidate(now_ms)

    def to_candidate(self, now_ms: int) -> None:
        if not isinstance(self.state, Prospective):
            raise RaftError(f"only a prospective becomes a candidate, not {self.state}")
        if self.epoch >= MAX_EPOCH:
            return  # the epochs are spent: the prospective loses at its election timeout
        tally = Tally.started(self.config.voters, self.node_id)
        deadline = now_ms + self._random_election_timeout_ms()
        self._enter(Candidate(Epoch(self.epoch + 1), deadline, tally), durable=True)
        if tally.won:
            self.to_leader(now_ms)

    def to_leader(self, now_ms: int) -> None:
        state = self.state
        if not isinstance(state, Candidate) or not state.tally.won:
            raise RaftError(f"cannot lead from {state}")
        start = self.log.end_offset
        leader = Leader.started(
            state.epoch,
            self.node_id,
            self.config.voters,
            start,
            state.tally.granted,
            now_ms,
            self.config.fetch_timeout_ms,
        )
        self._enter(leader, durable=True)
        self.out.append(BecomeLeader(state.epoch, start))
        record = LeaderChangeRecord(self.node_id, tuple(sorted(self.config.voters)), tuple(sorted(state.tally.granted)))
        self._append_as_leader(Batch(start, start, state.epoch, record), now_ms)

    def to_resigned(self, now_ms: int) -> None:
        state = self.state
        if not isinstance(state, Leader):
            raise RaftError(f"only a leader resigns, not {state}")
        deadline = now_ms + self._random_election_timeout_ms()
        others = frozenset(self.config.other_voters)
        self._enter(Resigned(state.epoch, deadline, others, state.successors()), durable=False)

    def after_prospective_loss(self, now_ms: int) -> None:
        state = self.state
        assert isinstance(state, Prospective)
        if state.leader_id is not None:
            self.to_follower(state.epoch, state.leader_id, now_ms)
        else:
            self.to_unattached(state.epoch, None, now_ms)

    def maybe_transition(self, leader_id: NodeId | None, epoch: Epoch, now_ms: int) -> None:
        """Kafka's `maybeTransition`: follow a higher epoch, or the named leader of this one.
        The callers check `consistent` first (a contradiction is refused, never followed)."""
        if not self.consistent(leader_id, epoch) or epoch > MAX_EPOCH:
            raise RaftError(f"leader {leader_id} of epoch {epoch} contradicts {self.state}")
        if epoch > self.epoch:
            if leader_id is not None:
                self.to_follower(epoch, leader_id, now_ms)
            else:
                self.to_unattached(epoch, None, now_ms)
        elif leader_id is not None and self.leader_id is None:
            self.to_follower(epoch, leader_id, now_ms)

    def consistent(self, leader_id: NodeId | None, epoch: Epoch) -> bool:
        """Whether `leader_id` may lead `epoch` as far as this node knows: not this node unless
        it leads (or resigned) that very epoch, and not another than the leader it knows of it."""
        if leader_id is not None and leader_id == self.node_id:
            return epoch == self.epoch and isinstance(self.state, Leader | Resigned)
        return epoch != self.epoch or leader_id is None or self.leader_id is None or leader_id == self.leader_id

    # ------------------------------------------------------------------ the log and the HW
    def _append_as_leader(self, batch: Batch, now_ms: int) -> None:
        self.log = self.log.appended((batch,))
        self.out.append(AppendBatches((batch,)))

    def advance_high_watermark(self, offset: int) -> None:
        if self.high_watermark is None or offset > self.high_watermark:
            self.high_watermark = offset
            self.out.append(HighWatermark(offset))

    def leader_update_high_watermark(self, now_ms: int) -> None:
        state = self.state
        if not isinstance(state, Leader):
            return
        updated = state.with_high_watermark(self.log.flushed_end_offset)
        if updated is not state and updated.high_watermark is not None:
            self.state = updated
            self.advance_high_watermark(updated.high_watermark)
            self.complete_parked(now_ms)

    def _snapshot_installed(self, now_ms: int, event: SnapshotInstalled) -> None:
        state = self.state
        if isinstance(state, Leader):
            raise RaftError(f"a leader cannot install snapshot {event.snapshot_id}")
        self.log = self.log.snapshot_installed(event.snapshot_id)
        self.installing_snapshot = None
        if isinstance(state, Follower):
            self.state = replace(state, fetch_deadline_ms=now_ms + self.config.fetch_timeout_ms)
        self.advance_high_watermark(event.snapshot_id.offset)

    def _snapshot_created(self, event: SnapshotCreated) -> None:
        snapshot = event.snapshot_id
        if self.high_watermark is None or snapshot.offset > self.high_watermark:
            raise RaftError(f"snapshot {snapshot} passes the high watermark {self.high_watermark}")
        if snapshot.offset > self.log.start_offset and self.log.epoch_at(snapshot.offset - 1) != snapshot.epoch:
            raise RaftError(f"snapshot {snapshot} does not match the log's epochs")
        self.log = self.log.snapshot_created(snapshot)

    # ------------------------------------------------------------------ the leader's held fetches
    def park(self, source: NodeId, correlation_id: int, request: FetchRequest, now_ms: int) -> None:
        self.parked.park(source, correlation_id, request, now_ms, self.config.fetch_max_wait_ms)

    def complete_parked(self, now_ms: int, *, only_expired: bool = False) -> None:
        """Answer the held fetches (those past their deadline only, or all: new records or a
        new high watermark)."""
        for parked in self.parked.take(now_ms, only_expired=only_expired):
            if isinstance(self.state, Leader):
                response = inbound.fetch_from_leader(self, now_ms, parked.request, fetched_ms=parked.arrived_ms)
                self.out.append(SendResponse(parked.source, parked.correlation_id, response))

    def _answer_parked_not_leader(self) -> None:
        for parked in self.parked.take(0):
            response = FetchResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, self.leader_id, self.epoch)
            self.out.append(SendResponse(parked.source, parked.correlation_id, response))

    # ------------------------------------------------------------------ polling
    def _take(self) -> list[Action]:
        out, self.out = self.out, []
        return out

    def send(self, destination: NodeId, request: Request, now_ms: int) -> bool:
        if not self.in_flight.is_ready(destination, now_ms):
            return False
        correlation_id = self.in_flight.sent(destination, now_ms)
        self.out.append(SendRequest(destination, correlation_id, request))
        return True
