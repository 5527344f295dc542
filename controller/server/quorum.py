"""The controller quorum's shell: the Raft core (`controller.raft`) bound to the network,
the clock and the metadata log, and the controller above it bound to the quorum.

Rules:
- One task executes the core's actions, in the order the core gave them, each finished before
  the next starts (`controller.raft.actions`): the quorum-state file is written and fsync'd
  before anything sent after it; a follower's appends, truncations and snapshot installs are
  the log's, done in a worker thread, then reported back (`LogFlushed`, `SnapshotInstalled`).
- Inbound RPCs are the inbound side's (`controller.server.raft_inbound`): queued, checked, handed
  to the core on the quorum's task, and answered when the core says (`SendResponse`). An answer
  from a peer whose handling fails is logged, counted and taken as a failed request. Only the
  node's own disk failing stops it (a `LogError` from executing an action).
- Outbound: one link per other voter (`controller.server.peer_link`), TLS when the daemon's
  listener is.
- The controller: the leader appends its epoch's LeaderChange, and becomes the active
  controller once the high watermark passes it (everything before its epoch is then committed
  and replayed: Kafka's controller activates likewise), with the Raft epoch as its controller
  epoch, every broker's session afresh and a FULL LeaderAndIsr for every live broker. It then
  appends through the writer, which asks `appending` (the core assigns the offsets, or refuses:
  the epoch is over) before the write, and `committed` after the fsync: True once the high
  watermark passes the batch, False once the epoch is over. A standby replays up to the high
  watermark as it moves (hot standby). When the node stops leading, the controller resigns at
  once: nothing more is decided, acknowledged or pushed in that epoch; held commits answer
  nothing (their connections close); queued control orders are dropped; the state goes back to
  what is committed.
- Time is the event loop's monotonic clock in milliseconds; randomness is the node's seeded
  `random.Random`.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import trio

from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch

from ..auth.voters import VoterIdentities
from ..control.orders import ControlOrder
from ..engine import ControllerEngine
from ..log import IncomingSnapshot, LogError
from ..log.quorum_state import write_election
from ..raft import (
    Action,
    AppendBatches,
    BecomeLeader,
    ElectionState,
    Epoch,
    EpochStart,
    Event,
    HighWatermark,
    InstallSnapshot,
    LeaderChanged,
    LeaderChangeRecord,
    LogFlushed,
    LogView,
    NodeId,
    NotLeader,
    OffsetAndEpoch,
    PersistQuorumState,
    RaftConfig,
    RaftError,
    RaftNode,
    RequestFailed,
    ResponseReceived,
    SendRequest,
    SendResponse,
    SnapshotCreated,
    SnapshotInstalled,
    StopLeading,
    Tick,
)
from ..raft import messages as rm
from ..raft.leader import Leader
from ..raft.state import Resigned
from . import raft_wire as wire
from .denials import Denials
from .peer_link import PeerLink
from .quorum_config import QuorumConfig
from .raft_inbound import InboundMetrics, RaftInbound
from .tls import TlsOptions
from .writer import run_paced

log = logging.getLogger("fencer.quorum")
#: the payload of a batch the writer wrote itself (the core only hears of its offsets)
_WRITTEN = object()
ALIVE_INTERVAL_S = 0.05
#: how often a commit waiting for the lease (not for the high watermark) looks again
LEASE_RECHECK_S = 0.05
#: fetches read within this long after a stall are taken as having waited through it
STALL_GRACE_MS = 100


def recovered_view(engine: ControllerEngine) -> LogView:
    """The log as the core must see it at start-up: from the newest snapshot (if any) to its end,
    with the epochs of its batches."""
    log_ = engine.log
    snapshots = log_.snapshots()
    snapshot = OffsetAndEpoch(snapshots[-1].end_offset, Epoch(snapshots[-1].epoch)) if snapshots else None
    start = snapshot.offset if snapshot is not None else 0
    kept: list[EpochStart] = []
    for epoch, offset in log_.epoch_entries():
        if offset < start:
            kept = [EpochStart(Epoch(epoch), start)]  # an epoch that began before the snapshot goes on after it
        else:
            kept.append(EpochStart(Epoch(epoch), offset))
    kept = [entry for entry in kept if entry.start_offset < log_.next_offset]
    return LogView(start, log_.next_offset, log_.next_offset, tuple(kept), snapshot)


def recovered_election(engine: ControllerEngine) -> ElectionState | None:
    state = engine.log.quorum_state
    if state is None:
        return None
    leader = NodeId(state.leader_id) if state.leader_id >= 0 else None
    voted = NodeId(state.voted_id) if state.voted_id >= 0 else None
    return ElectionState(Epoch(max(state.leader_epoch, 0)), leader, voted)


class QuorumMetrics(InboundMetrics, Protocol):
    def raft_commit(self, seconds: float) -> None: ...
    def election(self, seconds: float) -> None: ...


class OrderSink(Protocol):
    """The control channel, as the quorum uses it."""

    def submit(self, orders: Sequence[ControlOrder]) -> None: ...
    def clear(self) -> object: ...


class _Uncounted:
    """The metrics of a quorum built without the daemon's: nothing is counted."""

    def request_failed(self, stage: str) -> None: ...
    def authorization_denied(self, api: str, principal: str) -> None: ...
    def raft_commit(self, seconds: float) -> None: ...
    def election(self, seconds: float) -> None: ...


class Quorum:
    """A controller quorum member: the core, its peers, and the controller bound to it."""

    def __init__(
        self,
        config: QuorumConfig,
        engine: ControllerEngine,
        *,
        rng: random.Random | None = None,
        clock_ms: Callable[[], int] | None = None,
        wall_ms: Callable[[], int] | None = None,
        tls: TlsOptions | None = None,
        metrics: QuorumMetrics | None = None,
        channel: OrderSink | None = None,
        denials: Denials | None = None,
    ) -> None:
        """`channel`: where the active controller's orders go (None: nowhere, for tests);
        `metrics`: the daemon's (None: counted nowhere)."""
        self.config = config
        #: the links' TLS client context (the node's certificate), None: plaintext links
        self.tls = None if tls is None else tls.client
        self.engine = engine
        self.log = engine.log
        raft_config = RaftConfig(
            node_id=NodeId(config.node_id),
            voters=frozenset(NodeId(voter) for voter in config.voter_ids),
            cluster_id=engine.config.cluster_id,
            election_timeout_ms=config.election_timeout_ms,
            fetch_timeout_ms=config.fetch_timeout_ms,
        )
        self.node = RaftNode(raft_config, rng or random.Random(), recovered_election(engine), recovered_view(engine))
        self._clock_ms = clock_ms or (lambda: int(trio.current_time() * 1000))
        self._wall_ms = wall_ms or (lambda: time.time_ns() // 1_000_000)
        #: set by the daemon once built (it commits through this quorum): resigns with the node
        self.writer: Any = None
        self.channel = channel
        self.metrics: QuorumMetrics = metrics or _Uncounted()
        self._actions: deque[Action] = deque()
        self._actions_ready = trio.Event()
        self._timers_changed = trio.Event()
        self._commit_moved = trio.Event()
        self.inbound = RaftInbound(
            self.node,
            config,
            engine,
            self._handle,
            clock_ms=self._clock_ms,
            wall_ms=self._wall_ms,
            identities=(
                VoterIdentities(config.node_id, config.voter_ids, tls.principal, dict(config.voter_principals))
                if tls is not None and tls.clients_authenticated
                else None
            ),
            metrics=self.metrics,
            denials=denials or Denials(self.metrics),
        )
        self._links = {voter.node_id: PeerLink(self, voter) for voter in config.peers()}
        #: (epoch, the offset the high watermark must pass) while becoming the active controller
        self._activating: tuple[int, int] | None = None
        #: the epoch this node is the active controller of, else None
        self.active_epoch: int | None = None
        self.high_watermark: int | None = None
        #: set once this node first became the active controller
        self.activated = trio.Event()
        #: when this node last lost sight of a leader (for the election latency), and the metrics
        self._leaderless_since_ms: int | None = self._clock_ms()
        #: the event loop's last sign of life, and the end of its last stall (see `_alive`)
        self._alive_ms = self._clock_ms()
        self._woke_ms: int | None = None
        self._nursery: trio.Nursery | None = None
        self._stopped = trio.Event()  # set once `run` has ended
        self._snapshotting = False

    # ------------------------------------------------------------------ what others read
    @property
    def leader_id(self) -> int | None:
        """The leader a NOT_CONTROLLER answer names: none while this node has resigned its epoch
        (the Raft core keeps itself as that epoch's leader, but it leads nothing any more)."""
        return None if isinstance(self.node.state, Resigned) else self.node.leader_id

    @property
    def epoch(self) -> int:
        return self.node.epoch

    def view(self) -> dict[str, Any]:
        """Who leads, as this node knows it: for /state and the metrics (Kafka's raft-metrics)."""
        state, node = self.node.state, self.node
        lag: dict[int, int] = {}
        if isinstance(state, Leader):
            for voter in sorted(state.voters - {state.local_id}):
                progress = state.progress.get(voter)
                end = progress.end_offset if progress is not None else None
                lag[voter] = node.log.end_offset - (end if end is not None else 0)
        return {
            "node_id": self.config.node_id,
            "state": type(state).__name__.lower(),
            "leader_id": node.leader_id,
            "epoch": node.epoch,
            "voted_id": node.voted_id,
            "high_watermark": self.high_watermark,
            "log_end_offset": node.log.end_offset,
            "active_controller": self.active_epoch is not None,
            "voters": [str(voter) for voter in self.config.voters],
            "follower_lag": lag,
        }

    # ------------------------------------------------------------------ the writer's commit quorum
    def _leader_epoch(self) -> int | None:
        """The epoch this node actively controls and still leads, once the core has seen the
        time (a node paused past its check-quorum deadline resigns here, before appending more)."""
        epoch = self.active_epoch
        if epoch is None:
            return None
        self._handle(Tick())
        state = self.node.state
        return epoch if isinstance(state, Leader) and state.epoch == epoch else None

    def _lease_holds(self, state: Leader) -> bool:
        """The core's lease rule (`Leader.lease_holds`) at this event loop's time: a node paused
        past it (SIGSTOP, a long GC) answers nothing it decided, even before check-quorum (1.5
        fetch timeouts) makes it resign. Fetches read right after a stall may have waited in the
        socket through all of it: only those that arrived once the event loop ran again count."""
        now = self._alive(self._clock_ms())
        counted_from = self._woke_ms + STALL_GRACE_MS if self._woke_ms is not None else -1
        return state.lease_holds(now, self.config.fetch_timeout_ms, counted_from)

    def _alive(self, now_ms: int) -> int:
        """Note that the event loop runs at `now_ms`; a gap longer than a quarter of the fetch
        timeout since it last did is a stall (SIGSTOP, a long GC, a starved machine): its end is
        remembered for the lease. Returns `now_ms`."""
        if now_ms - self._alive_ms > self.config.fetch_timeout_ms // 4:
            self._woke_ms = now_ms
            log.warning("node %d: the event loop stalled for %d ms", self.config.node_id, now_ms - self._alive_ms)
        self._alive_ms = now_ms
        return now_ms

    async def _keep_alive(self) -> None:
        while True:
            self._alive(self._clock_ms())
            await trio.sleep(ALIVE_INTERVAL_S)

    def appending(self, end_offset: int, records: int) -> bool:
        epoch = self._leader_epoch()
        if epoch is None or records <= 0:
            return epoch is not None
        result = self.node.append(self._clock_ms(), epoch, records, _WRITTEN)
        if isinstance(result, NotLeader):
            return False
        if result.batch.end_offset != end_offset:
            raise LogError(f"the quorum's log ends at {result.batch.end_offset}, the controller's at {end_offset}")
        self._enqueue(result.actions)
        return True

    def written(self, end_offset: int) -> None:
        """The writer fsync'd everything below `end_offset`: the core counts it (a leader's high
        watermark, the held fetches it answers), whether this node still leads or not. A deposed
        leader fetches from the new one only once its whole log is flushed: unreported, its last
        batch kept it from ever fetching (or truncating that batch) again."""
        if end_offset > self.node.log.flushed_end_offset:
            self._handle(LogFlushed(end_offset))

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        """The writer (or a standby, `_standby_snapshot`) wrote a snapshot of committed state:
        the core may serve it to lagging followers, and its log now starts there."""
        try:
            self._handle(SnapshotCreated(OffsetAndEpoch(end_offset, Epoch(epoch))))
        except RaftError as exc:  # the quorum moved on meanwhile (a truncation, a newer snapshot)
            log.warning("snapshot %d-%d not given to the quorum: %s", end_offset, epoch, exc)

    async def committed(self, end_offset: int) -> bool:
        """True once everything below `end_offset` is committed and this node's lease holds (so
        no other leader can have been elected meanwhile: answers may go); False once this node no
        longer leads the epoch (they never may). Records are appended whether the lease holds or
        not (they commit only with a majority anyway); the lease only holds the answers back."""
        started = self._clock_ms()
        epoch = self._leader_epoch()
        if epoch is None:
            return False
        while True:
            state = self.node.state
            if self.active_epoch != epoch or not isinstance(state, Leader) or state.epoch != epoch:
                return False
            if self.high_watermark is not None and self.high_watermark >= end_offset and self._lease_holds(state):
                self.metrics.raft_commit((self._clock_ms() - started) / 1000)
                return True
            with trio.move_on_after(LEASE_RECHECK_S):  # the lease comes back with the next fetches
                await self._commit_moved.wait()
            self._handle(Tick())

    # ------------------------------------------------------------------ running
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._enqueue(self.node.start(self._clock_ms()))
                nursery.start_soon(self._execute)
                nursery.start_soon(self._tick)
                nursery.start_soon(self._keep_alive)
                nursery.start_soon(self.inbound.serve)
                for link in self._links.values():
                    nursery.start_soon(link.run)
                task_status.started()
        finally:
            self._stopped.set()

    async def stop(self) -> None:
        """Stop every task of the quorum and wait until they are gone, the log's work in worker
        threads included (an append, a truncation, a snapshot: never cut short), so that the log
        can be closed under nobody (the daemon's shutdown, once the writer has drained)."""
        if self._nursery is None:
            return
        self._nursery.cancel_scope.cancel()
        await self._stopped.wait()

    def _handle(self, event: Event) -> None:
        self._enqueue(self.node.handle(self._clock_ms(), event))

    def _enqueue(self, actions: Iterable[Action]) -> None:
        self._actions.extend(actions)
        self._actions_ready.set()
        self._timers_changed.set()

    async def _tick(self) -> None:
        while True:
            wake = self.node.next_wakeup_ms(self._clock_ms())
            changed = self._timers_changed = trio.Event()
            with trio.move_on_at(float("inf") if wake is None else wake / 1000):
                await changed.wait()
            if not changed.is_set():
                self._handle(Tick())

    async def _execute(self) -> None:
        while True:
            while not self._actions:
                self._actions_ready = trio.Event()
                await self._actions_ready.wait()
            await self._do(self._actions.popleft())

    async def _do(self, action: Action) -> None:
        if isinstance(action, SendRequest):
            self._links[action.destination].submit(action.correlation_id, action.request)
        elif isinstance(action, SendResponse):
            await self.inbound.respond(action.correlation_id, action.response)
        elif isinstance(action, PersistQuorumState):
            election = action.election
            write = functools.partial(
                write_election,
                self.log.data_dir / "__cluster_metadata-0",
                -1 if election.leader_id is None else election.leader_id,
                election.epoch,
                -1 if election.voted_id is None else election.voted_id,
                list(self.config.voter_ids),
                fsync=True,
            )
            await trio.to_thread.run_sync(write)
        elif isinstance(action, AppendBatches):
            await self._append(action)
        elif isinstance(action, HighWatermark):
            await self._high_watermark(action.offset)
        elif isinstance(action, BecomeLeader):
            self._activating = (action.epoch, action.epoch_start_offset + 1)
            log.info(
                "node %d leads epoch %d from offset %d", self.config.node_id, action.epoch, action.epoch_start_offset
            )
        elif isinstance(action, StopLeading):
            await self._stop_leading(action.epoch)
        elif isinstance(action, LeaderChanged):
            log.info("epoch %d: leader %s", action.epoch, "unknown" if action.leader_id is None else action.leader_id)
            now = self._clock_ms()
            if action.leader_id is None:
                self._leaderless_since_ms = self._leaderless_since_ms or now
            elif self._leaderless_since_ms is not None:
                self.metrics.election((now - self._leaderless_since_ms) / 1000)
                self._leaderless_since_ms = None
        elif isinstance(action, InstallSnapshot):
            await self._install_snapshot(action)
        else:  # TruncateTo
            offset = action.end_offset
            log.info("truncating the log to offset %d (a divergent tail)", offset)
            await trio.to_thread.run_sync(self.log.truncate_to, offset)

    # ------------------------------------------------------------------ the log
    async def _append(self, action: AppendBatches) -> None:
        first = action.batches[0]
        if first.payload is _WRITTEN:
            return  # the writer's own: written and fsync'd by it, reported by `committed`
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
            raw = b"".join(wire.batch_bytes(action.batches))
        end = await trio.to_thread.run_sync(self.log.append_as_follower, raw)
        self._handle(LogFlushed(end))

    async def _install_snapshot(self, action: InstallSnapshot) -> None:
        incoming = action.payload
        if isinstance(incoming, IncomingSnapshot):
            await trio.to_thread.run_sync(incoming.complete)
        await trio.to_thread.run_sync(self.log.truncate_to_latest_snapshot)
        self.engine.reload()
        log.info("installed the leader's snapshot %s", action.snapshot_id)
        self._handle(SnapshotInstalled(action.snapshot_id))

    # ------------------------------------------------------------------ the controller above
    async def _high_watermark(self, offset: int) -> None:
        self.high_watermark = offset
        self._commit_moved.set()
        self._commit_moved = trio.Event()
        activating = self._activating
        if activating is not None and offset >= activating[1]:
            await self._activate(*activating)
        elif self.active_epoch is None:
            await run_paced(self.engine.catch_up(min(offset, self.log.next_offset)))
            self._maybe_standby_snapshot()

    def _maybe_standby_snapshot(self) -> None:
        """A standby snapshots its committed state as the active controller does (every
        `--snapshot-bytes` of log), so that retention bounds its log too."""
        engine = self.engine
        if self._snapshotting or not engine.snapshot_wanted or self._nursery is None:
            return
        work = engine.standby_snapshot()
        if work is not None:
            self._snapshotting = True
            self._nursery.start_soon(self._standby_snapshot, work)

    async def _standby_snapshot(self, work: Any) -> None:
        try:
            encoded = await run_paced(work)
            await trio.to_thread.run_sync(self.engine.write_snapshot, encoded)
        except LogError:
            raise
        except Exception as exc:  # the log is intact: the next high watermark tries again
            log.error("standby snapshot failed: %s", exc)
        else:
            log.info("wrote standby snapshot %d-%d", encoded.end_offset, encoded.epoch)
            self.snapshot_created(encoded.end_offset, encoded.epoch)
        finally:
            self._snapshotting = False

    async def _activate(self, epoch: int, start: int) -> None:
        """The LeaderChange of `epoch` is committed: become the active controller."""
        self._activating = None
        engine = self.engine
        await run_paced(engine.catch_up(self.log.next_offset))
        if not self.node.is_leader or self.node.epoch != epoch:
            return  # lost meanwhile
        aborted_before = engine.startup.aborted
        engine.activate(time.monotonic_ns())
        if engine.startup.aborted is not None and engine.startup.aborted != aborted_before:
            log.warning("%s", engine.startup.aborted)
        self.active_epoch = epoch
        self.activated.set()
        log.info("node %d is the active controller of epoch %d", self.config.node_id, epoch)
        if self.channel is not None:
            self.channel.submit(engine.full_state_orders())
        if self.writer is not None:
            self.writer.tick()  # commits what activation staged (an abort, bootstrap records), if anything

    async def _stop_leading(self, epoch: int) -> None:
        self._activating = None
        was_active = self.active_epoch is not None
        self.active_epoch = None
        self._commit_moved.set()  # held commits learn that they never will be
        self._commit_moved = trio.Event()
        if not was_active:
            return
        log.warning(
            "node %d is no longer the active controller (epoch %d is over: now %s in epoch %d)",
            self.config.node_id,
            epoch,
            type(self.node.state).__name__,
            self.node.epoch,
        )
        if self.channel is not None:
            self.channel.clear()
        if self.writer is not None:
            await self.writer.quiesce()  # its write in flight lands before the log is the follower's
        self.engine.resign()
        if self.high_watermark is not None:
            await run_paced(self.engine.catch_up(min(self.high_watermark, self.log.next_offset)))

    # ------------------------------------------------------------------ from the links
    def received(self, source: int, correlation_id: int, response: rm.Response) -> None:
        try:
            self._handle(ResponseReceived(NodeId(source), correlation_id, response))
        except Exception as exc:  # a bug on one answer: the core is as before it; the request failed
            log.error("quorum: voter %d's answer failed (%s): %s", source, type(response).__name__, exc, exc_info=exc)
            self.metrics.request_failed("raft")
            self.failed(source, correlation_id)

    def failed(self, destination: int, correlation_id: int) -> None:
        self._handle(RequestFailed(NodeId(destination), correlation_id))
