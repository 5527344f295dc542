"""One Raft node (Kafka's `KafkaRaftClient`), sans I/O: its interface, its log and high
watermark, and the leader's held fetches; its state transitions are `controller.raft.transitions`.

Rules:
- Drive it with `handle(now_ms, event)` (see `controller.raft.events`) and `append(...)`, and
  tick it at `next_wakeup_ms(now_ms)` at the latest; each call returns the ordered actions of
  `controller.raft.actions`, to be executed in order. Nothing here reads a clock or a socket:
  time is `now_ms`, every random choice comes from the `random.Random` given to the node.
- Start-up is `RaftNode(config, rng, election, log)` with what was recovered (the quorum-state
  file's content, the flushed log), then `start(now_ms)`: the state Kafka's
  `QuorumState.initialize` recovers (`controller.raft.transitions.recovered_state`). A sole
  voter leads at once.
- Every call handles its event, then polls as Kafka's `poll()` does (`controller.raft.poll`):
  the state's timers (election timeout: uniform in [T, 2T); fetch timeout; check-quorum), then
  what is due to be sent. Each destination has at most one request in flight
  (`controller.raft.requests`).
- A message naming another leader for the node's own epoch, or this node as leader when it is
  not, is refused (a request) or ignored (an answer) without a change (`consistent`); Kafka
  throws, and its raft thread dies.
- No peer's message can stop the node: requests and answers are checked before they change
  anything (`controller.raft.inbound`, `controller.raft.outbound`), and if handling one still
  raises (a bug), `handle` puts the node back as it was before the event and re-raises, so the
  shell can refuse that one message and go on.
- Requests are answered by `controller.raft.inbound`, responses read by
  `controller.raft.outbound`; they and `poll` change the node's state only through
  `controller.raft.transitions` (or by updating the current state's own fields).
- A flush lets the leader's high watermark move and its held fetches have the new records; an
  installed snapshot moves a follower's high watermark to its end. The high watermark emitted
  (`HighWatermark`) only grows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from protocol.error_codes import ErrorCode

from . import inbound, outbound, poll, transitions
from .actions import Action, AppendBatches, HighWatermark, SendRequest, SendResponse
from .config import RaftConfig
from .events import (
    Event,
    LogFlushed,
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    SnapshotCreated,
    SnapshotInstalled,
    Tick,
)
from .ids import Epoch, NodeId, OffsetAndEpoch
from .leader import Leader
from .log import LogView
from .messages import Batch, FetchRequest, FetchResponse, Request
from .purgatory import Purgatory
from .requests import InFlight
from .state import Candidate, ElectionState, Follower, Prospective, RaftError, Resigned, Unattached

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

    def consistent(self, leader_id: NodeId | None, epoch: Epoch) -> bool:
        """Whether `leader_id` may lead `epoch` as far as this node knows: not this node unless
        it leads (or resigned) that very epoch, and not another than the leader it knows of it."""
        if leader_id is not None and leader_id == self.node_id:
            return epoch == self.epoch and isinstance(self.state, Leader | Resigned)
        return epoch != self.epoch or leader_id is None or self.leader_id is None or leader_id == self.leader_id

    # ------------------------------------------------------------------ the interface
    def start(self, now_ms: int) -> list[Action]:
        if self._started:
            raise RaftError("started twice")
        self._started = True
        transitions.enter(self, transitions.recovered_state(self, now_ms), durable=True)
        if self.config.voters == {self.node_id} and isinstance(self.state, Unattached | Follower | Resigned):
            transitions.to_prospective(self, now_ms)
        elif isinstance(self.state, Candidate) and self.state.tally.won:
            transitions.to_leader(self, now_ms)
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
        elif isinstance(event, Resign):
            if isinstance(self.state, Leader) and self.state.epoch == event.epoch:
                transitions.to_resigned(self, now_ms)
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
        self.append_as_leader(batch)
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

    # ------------------------------------------------------------------ the log and the HW
    def append_as_leader(self, batch: Batch) -> None:
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

    def answer_parked_not_leader(self) -> None:
        """Answer every held fetch NOT_LEADER_OR_FOLLOWER (a leader leaving its epoch)."""
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
