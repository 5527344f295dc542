"""The Raft core (`controller.raft`) bound to the network, the clock and the metadata log.

Rules:
- One task executes the core's actions, in the order the core gave them, each finished before
  the next starts (`controller.raft.actions`): the quorum-state file is written and fsync'd
  before anything sent after it; a follower's appends, truncations and snapshot installs are
  the log's, done in a worker thread, then reported back (`LogFlushed`, `SnapshotInstalled`).
  What concerns the controller above goes to its `RaftListener`, in the same order and
  awaited the same way: an epoch this node leads, an epoch over, the high watermark moved, a
  leader's snapshot installed. The controller replays the log under `stable_log`, which a
  truncation or a snapshot install waits for (and holds while it rewrites the log).
- The log has one writer, this driver: the leader's batches (`write_leader_batches`, called by
  the quorum for the writer's commits, offsets from the core), its LeaderChange, a follower's
  appends, truncations and snapshot installs, one at a time. The controller above only reads it.
- Inbound RPCs are `raft_inbound`'s: queued, checked, handed to the core on this driver's tasks
  (`handle`), and answered when the core says (`SendResponse`). Outbound: one link per other
  voter (`peer_link`), TLS when the daemon's listener is. An answer from a peer whose handling
  fails is logged, counted and taken as a failed request. Only the node's own disk failing stops
  it (a `LogError` from executing an action).
- The leader's lease is the core's rule (`Leader.lease_holds`) at this event loop's time
  (`lease_holds`): the loop's stalls (SIGSTOP, a long GC, a starved machine: a gap of more than
  a quarter of the fetch timeout between two signs of life) are noticed, and fetches read right
  after one count only from its end.
- Time is the event loop's monotonic clock in milliseconds; randomness is the node's seeded
  `random.Random`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

import trio

from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch

from ..auth.voters import VoterIdentities
from ..engine import Commit, ControllerEngine
from ..log import IncomingSnapshot, LogError
from ..log.quorum_state import write_election
from ..raft import (
    Action,
    AppendBatches,
    BecomeLeader,
    ElectionState,
    Epoch,
    Event,
    HighWatermark,
    InstallSnapshot,
    LeaderChanged,
    LeaderChangeRecord,
    LogFlushed,
    NodeId,
    NotLeader,
    PersistQuorumState,
    RaftConfig,
    RaftNode,
    RequestFailed,
    ResponseReceived,
    SendRequest,
    SendResponse,
    SnapshotInstalled,
    StopLeading,
    Tick,
)
from ..raft import messages as rm
from ..raft.leader import Leader
from ..raft.wire_responses import batch_bytes
from ..runtime import in_thread, in_thread_now
from .denials import Denials
from .peer_link import PeerLink
from .quorum_config import QuorumConfig
from .raft_inbound import InboundMetrics, RaftInbound
from .raft_recovery import recovered_election, recovered_view
from .tls import TlsOptions

log = logging.getLogger("fencer.quorum")
ALIVE_INTERVAL_S = 0.05
#: fetches read within this long after a stall are taken as having waited through it
STALL_GRACE_MS = 100


class DriverMetrics(InboundMetrics, Protocol):
    def election(self, seconds: float) -> None: ...


class RaftListener(Protocol):
    """The controller above the driver (Kafka's RaftClient.Listener)."""

    def led(self, epoch: int, start_offset: int) -> None:
        """This node leads `epoch`; its LeaderChange is at `start_offset`."""

    async def leadership_ended(self, epoch: int) -> None:
        """This node no longer leads `epoch` (whatever it still holds of it never commits)."""

    def committed_to(self, offset: int) -> None:
        """The high watermark moved to `offset` (taken in at once: what it asks of the
        controller's state waits its turn there)."""

    def snapshot_loaded(self) -> None:
        """The log now starts at the leader's snapshot just installed: state from it."""


class RaftDriver:
    def __init__(
        self,
        config: QuorumConfig,
        engine: ControllerEngine,
        listener: RaftListener,
        *,
        rng: random.Random,
        clock_ms: Callable[[], int],
        wall_ms: Callable[[], int],
        tls: TlsOptions | None,
        metrics: DriverMetrics,
        denials: Denials,
    ) -> None:
        """`engine`: its log is the one the driver writes, its authorizer the inbound side's."""
        self.config = config
        self.log = engine.log
        self.metrics = metrics
        self._listener = listener
        #: the links' TLS client context (the node's certificate), None: plaintext links
        self.tls = None if tls is None else tls.client
        raft_config = RaftConfig(
            node_id=NodeId(config.node_id),
            voters=frozenset(NodeId(voter) for voter in config.voter_ids),
            cluster_id=engine.config.cluster_id,
            election_timeout_ms=config.election_timeout_ms,
            fetch_timeout_ms=config.fetch_timeout_ms,
        )
        self.node = RaftNode(raft_config, rng, recovered_election(self.log), recovered_view(self.log))
        self.clock_ms = clock_ms
        self._wall_ms = wall_ms
        self._actions: deque[Action] = deque()
        self._actions_ready = trio.Event()
        self._executing = False  # an action is being done (`_execute`, or at once in `_enqueue`)
        self._log_turn = trio.Lock()
        self._stable = trio.Lock()  # held by the log's readers, and by truncations and installs
        self._timers_changed = trio.Event()
        self.inbound = RaftInbound(
            self.node,
            config,
            engine,
            self.handle,
            clock_ms=clock_ms,
            wall_ms=wall_ms,
            identities=(
                VoterIdentities(config.node_id, config.voter_ids, tls.principal, dict(config.voter_principals))
                if tls is not None and tls.clients_authenticated
                else None
            ),
            metrics=metrics,
            denials=denials,
        )
        self._links = {voter.node_id: PeerLink(self, voter) for voter in config.peers()}
        #: when this node last lost sight of a leader (for the election latency metric)
        self._leaderless_since_ms: int | None = clock_ms()
        #: the event loop's last sign of life, and the end of its last stall (see `_alive`)
        self._alive_ms = clock_ms()
        self._woke_ms: int | None = None
        self._nursery: trio.Nursery | None = None
        self._stopped = trio.Event()  # set once `run` has ended
        #: called with the core and its actions after each step it takes, before they run (a
        #: simulation's invariants read the core there); None: nobody watches
        self.observer: Callable[[RaftNode, Sequence[Action]], None] | None = None

    # ------------------------------------------------------------------ the core
    def handle(self, event: Event) -> None:
        """Give the core an event; the actions it answers with are executed in order."""
        self._enqueue(self.node.handle(self.clock_ms(), event))

    async def write_leader_batches(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        """The writer's commit, the leader's next records: the core gives them their offsets (the
        commit is the payload it hands back in its append action, which the driver skips), then
        `write` puts them on disk (in a worker thread, the log's other writes waiting their
        turn) and the core hears they are flushed. False, writing nothing, if this node does not
        lead the commit's epoch."""
        result = self.node.append(self.clock_ms(), Epoch(commit.epoch), commit.records, commit)
        if isinstance(result, NotLeader):
            return False
        if result.batch.end_offset != commit.end_offset:
            raise LogError(
                f"the quorum's log ends at {result.batch.end_offset}, the controller's at {commit.end_offset}"
            )
        self._enqueue(result.actions)
        async with self._writing():
            await in_thread_now(write, commit)
        self.flushed(commit.end_offset)
        return True

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """One write to the log at a time (the leader's batches, a follower's appends, truncations,
        snapshot installs); taken without a checkpoint when free, as it nearly always is."""
        try:
            self._log_turn.acquire_nowait()
        except trio.WouldBlock:
            await self._log_turn.acquire()
        try:
            yield
        finally:
            self._log_turn.release()

    @contextlib.asynccontextmanager
    async def stable_log(self) -> AsyncIterator[None]:
        """While held, the log's records stay as they are (appends go on, but no truncation or
        snapshot install rewrites it): the controller above replays the log under it."""
        async with self._stable:
            yield

    def flushed(self, end_offset: int) -> None:
        """Everything below `end_offset` is in the local log and fsync'd (the leader's batches):
        the core counts it (a leader's high watermark, the held fetches it answers), whether this
        node still leads or not. A deposed leader fetches from the new one only once its whole log
        is flushed: unreported, its last batch kept it from ever fetching (or truncating it) again."""
        if end_offset > self.node.log.flushed_end_offset:
            self.handle(LogFlushed(end_offset))

    def lease_holds(self, state: Leader) -> bool:
        """The core's lease rule at this event loop's time: a node paused past it answers nothing
        it decided, even before check-quorum (1.5 fetch timeouts) makes it resign. Fetches read
        right after a stall may have waited in the socket through all of it: only those that
        arrived once the event loop ran again count."""
        now = self._alive(self.clock_ms())
        counted_from = self._woke_ms + STALL_GRACE_MS if self._woke_ms is not None else -1
        return state.lease_holds(now, self.config.fetch_timeout_ms, counted_from)

    def _alive(self, now_ms: int) -> int:
        """Note that the event loop runs at `now_ms`; a gap longer than a quarter of the fetch
        timeout since it last did is a stall: its end is remembered for the lease."""
        if now_ms - self._alive_ms > self.config.fetch_timeout_ms // 4:
            self._woke_ms = now_ms
            log.warning("node %d: the event loop stalled for %d ms", self.config.node_id, now_ms - self._alive_ms)
        self._alive_ms = now_ms
        return now_ms

    # ------------------------------------------------------------------ running
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._enqueue(self.node.start(self.clock_ms()))
                nursery.start_soon(self._execute)
                nursery.start_soon(self._tick)
                nursery.start_soon(self._keep_alive)
                nursery.start_soon(self.inbound.serve)
                for link in self._links.values():
                    nursery.start_soon(link.run)
                task_status.started()
        finally:
            self._stopped.set()

    def spawn(self, work: Callable[[], Awaitable[Any]]) -> None:
        """Run `work` beside the driver's tasks (stopped with them)."""
        assert self._nursery is not None
        self._nursery.start_soon(work)

    async def stop(self) -> None:
        """Stop every task of the driver and wait until they are gone, the log's work in worker
        threads included (an append, a truncation, a snapshot: never cut short), so that the log
        can be closed under nobody (the daemon's shutdown, once the writer has drained)."""
        if self._nursery is None:
            return
        self._nursery.cancel_scope.cancel()
        await self._stopped.wait()

    def _enqueue(self, actions: Iterable[Action]) -> None:
        """Queue actions for the executing task; while it is idle, those that complete without
        waiting (a message to send, an answer whose records are in memory, the high watermark)
        are done here at once, in order, up to the first that
        must wait: a scheduling round sooner, where each round of a busy leader costs a fraction
        of a millisecond."""
        pending = list(actions)
        if self.observer is not None:
            self.observer(self.node, pending)
        if not self._actions and not self._executing and self._nursery is not None:
            self._executing = True  # actions queued meanwhile (re-entrantly) wait their turn
            try:
                done = 0
                for action in pending:
                    if not self._do_now(action):
                        break
                    done += 1
                pending = pending[done:]
            finally:
                self._executing = False
        self._actions.extend(pending)
        self._actions_ready.set()
        self._timers_changed.set()

    def _do_now(self, action: Action) -> bool:
        """Do `action` if it needs no waiting (see `_enqueue`): whether it was done."""
        if isinstance(action, SendRequest):
            self._links[action.destination].submit(action.correlation_id, action.request)
        elif isinstance(action, SendResponse):
            return self.inbound.respond_now(action.correlation_id, action.response)
        elif isinstance(action, HighWatermark):
            self._listener.committed_to(action.offset)
        elif isinstance(action, LeaderChanged):
            self._leader_changed(action)
        else:
            return False
        return True

    async def _keep_alive(self) -> None:
        while True:
            self._alive(self.clock_ms())
            await trio.sleep(ALIVE_INTERVAL_S)

    async def _tick(self) -> None:
        while True:
            wake = self.node.next_wakeup_ms(self.clock_ms())
            changed = self._timers_changed = trio.Event()
            # half a millisecond past the wake-up: at `wake / 1000` itself the clock's reading in
            # whole milliseconds may still round down to `wake - 1`, and the core would not be due
            # yet (a loop that spins until the clock moves, for ever on a simulation's clock)
            with trio.move_on_at(float("inf") if wake is None else (wake + 0.5) / 1000):
                await changed.wait()
            if not changed.is_set():
                self.handle(Tick())

    async def _execute(self) -> None:
        while True:
            while not self._actions:
                self._actions_ready = trio.Event()
                await self._actions_ready.wait()
            self._executing = True
            try:
                await self._do(self._actions.popleft())
            finally:
                self._executing = False

    async def _do(self, action: Action) -> None:
        if isinstance(action, SendRequest):
            self._links[action.destination].submit(action.correlation_id, action.request)
        elif isinstance(action, SendResponse):
            await self.inbound.respond(action.correlation_id, action.response)
        elif isinstance(action, PersistQuorumState):
            await self._persist(action.election)
        elif isinstance(action, AppendBatches):
            await self._append(action)
        elif isinstance(action, HighWatermark):
            self._listener.committed_to(action.offset)
        elif isinstance(action, BecomeLeader):
            log.info(
                "node %d leads epoch %d from offset %d", self.config.node_id, action.epoch, action.epoch_start_offset
            )
            self._listener.led(action.epoch, action.epoch_start_offset)
        elif isinstance(action, StopLeading):
            await self._listener.leadership_ended(action.epoch)
        elif isinstance(action, LeaderChanged):
            self._leader_changed(action)
        elif isinstance(action, InstallSnapshot):
            await self._install_snapshot(action)
        else:  # TruncateTo
            offset = action.end_offset
            log.info("truncating the log to offset %d (a divergent tail)", offset)
            async with self._stable, self._writing():
                await in_thread(self.log.truncate_to, offset)

    def _leader_changed(self, action: LeaderChanged) -> None:
        log.info("epoch %d: leader %s", action.epoch, "unknown" if action.leader_id is None else action.leader_id)
        now = self.clock_ms()
        if action.leader_id is None:
            self._leaderless_since_ms = self._leaderless_since_ms or now
        elif self._leaderless_since_ms is not None:
            self.metrics.election((now - self._leaderless_since_ms) / 1000)
            self._leaderless_since_ms = None

    # ------------------------------------------------------------------ the log
    async def _persist(self, election: ElectionState) -> None:
        """Write the election state before acting on it (a `LogError` if it cannot: fatal)."""
        write = functools.partial(
            write_election,
            self.log.data_dir / "__cluster_metadata-0",
            -1 if election.leader_id is None else election.leader_id,
            election.epoch,
            -1 if election.voted_id is None else election.voted_id,
            list(self.config.voter_ids),
            fsync=True,
        )
        await in_thread(write)  # the quorum-state file: not the log's segments

    async def _append(self, action: AppendBatches) -> None:
        first = action.batches[0]
        if isinstance(first.payload, Commit):
            return  # the leader's own: written by `write_leader_batches`
        if isinstance(first.payload, LeaderChangeRecord):
            record = first.payload
            message = LeaderChangeMessage(
                version=0,
                leader_id=record.leader_id,
                voters=tuple(LeaderChangeMessageVoter(voter_id=v) for v in record.voters),
                granting_voters=tuple(LeaderChangeMessageVoter(voter_id=v) for v in record.granting_voters),
            )
            raw = control_batch(first.base_offset, first.epoch, self._wall_ms(), [(message, 0)])
        else:
            raw = b"".join(batch_bytes(action.batches))
        async with self._writing():
            end = await in_thread(self.log.append_as_follower, raw)
        self.handle(LogFlushed(end))

    async def _install_snapshot(self, action: InstallSnapshot) -> None:
        incoming = action.payload
        async with self._stable:
            async with self._writing():
                if isinstance(incoming, IncomingSnapshot):
                    await in_thread(incoming.complete)
                await in_thread(self.log.truncate_to_latest_snapshot)
            self._listener.snapshot_loaded()
        log.info("installed the leader's snapshot %s", action.snapshot_id)
        self.handle(SnapshotInstalled(action.snapshot_id))

    # ------------------------------------------------------------------ from the links
    def received(self, source: int, correlation_id: int, response: rm.Response) -> None:
        try:
            self.handle(ResponseReceived(NodeId(source), correlation_id, response))
        except Exception as exc:  # a bug on one answer: the core is as before it; the request failed
            log.error("quorum: voter %d's answer failed (%s): %s", source, type(response).__name__, exc, exc_info=exc)
            self.metrics.request_failed("raft")
            self.failed(source, correlation_id)

    def failed(self, destination: int, correlation_id: int) -> None:
        self.handle(RequestFailed(NodeId(destination), correlation_id))
