"""The controller quorum's shell (issue 21): the Raft core (`controller.raft`) bound to the network,
the clock and the metadata log, and the controller above it bound to the quorum.

Rules:
- One task executes the core's actions, in the order the core gave them, each finished before
  the next starts (`controller.raft.actions`): the quorum-state file is written and fsync'd
  before anything sent after it; a follower's appends, truncations and snapshot installs are
  the log's, done in a worker thread, then reported back (`LogFlushed`, `SnapshotInstalled`).
- Inbound RPCs come from the daemon's connections (`submit`) into a bounded queue, and are
  handled one at a time on the quorum's own task, never on a connection's: a full queue
  (`INBOUND_QUEUE_LIMIT` requests) makes the submitting connection wait, reading nothing meanwhile
  (`wait_for_room`); the queue's length is a metric. Vote, BeginQuorumEpoch, EndQuorumEpoch,
  Fetch and FetchSnapshot go to the core (`raft_wire` maps them; a request about another
  partition is answered INVALID_REQUEST at once); its answer comes back as an action and is sent
  on the request's connection, a Fetch's with the log's record bytes from the offset the core
  names (at most `FETCH_MAX_BYTES`, Kafka's 8 MiB, and only what is on disk: records the writer
  is still writing go with a later fetch), a FetchSnapshot's with the snapshot's bytes from the
  position asked (POSITION_OUT_OF_RANGE past its end). DescribeQuorum is answered from the
  core's state (`describe_quorum`).
- No request can stop the node: the core refuses what it cannot accept (`controller.raft.inbound`),
  and an error in the handling of one request anyway is logged with the request's summary,
  counted (`fencer_request_failures_total{stage="raft"}`) and answered UNKNOWN_SERVER_ERROR, the
  core left as it was before the request. An answer from a peer that fails likewise is logged,
  counted and taken as a failed request. Only the node's own disk failing stops it (a `LogError`
  from executing an action).
- A voter is who it proves to be (`controller.auth.voters`): when the listener authenticates its
  clients, a request naming another voter as its sender (a Fetch's or FetchSnapshot's replica
  id, a Vote's candidate, a BeginQuorumEpoch's or EndQuorumEpoch's leader) on a connection
  whose principal is not that voter's is answered CLUSTER_AUTHORIZATION_FAILED before the core
  sees it, counted as an authorization denial and logged (sparsely), whatever the authorizer says.
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
import itertools
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode, response_error_code
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch
from protocol.registry import api, encode_response
from protocol.spec import Data

from ..auth.voters import VoterIdentities
from ..core import denied_answer
from ..engine import ControllerEngine
from ..log import IncomingSnapshot, LogError, SnapshotId
from ..log.model import OffsetOutOfRangeError, PositionOutOfRangeError, SnapshotNotFoundError
from ..log.quorum_state import write_election
from ..ops.authorization import authorize_api
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
    RequestReceived,
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
from .connection import LARGE_FRAME_BYTES, Pending, request_context
from .describe_quorum import describe_quorum
from .logging_config import RateLimitedLogger
from .peer_link import FETCH_MAX_BYTES, PeerLink
from .quorum_config import QuorumConfig
from .tls import TlsOptions
from .writer import run_paced

log = logging.getLogger("fencer.quorum")
#: Raft requests waiting for the quorum's task; past it, connections wait to hand theirs on
INBOUND_QUEUE_LIMIT = 256
#: the payload of a batch the writer wrote itself (the core only hears of its offsets)
_WRITTEN = object()
QUORUM_API_KEYS = wire.RAFT_API_KEYS | {ApiKey.DESCRIBE_QUORUM}
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


@dataclass
class _Inbound:
    pending: Pending
    api_key: int
    version: int
    body: Any


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
    ) -> None:
        self.config = config
        #: the links' TLS client context (the node's certificate), None: plaintext links
        self.tls = None if tls is None else tls.client
        #: who may speak for which voter, when the listener authenticates its clients
        self.identities = (
            VoterIdentities(config.node_id, config.voter_ids, tls.principal, dict(config.voter_principals))
            if tls is not None and tls.clients_authenticated
            else None
        )
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
        #: set by the daemon: the writer (resigns with the node), the control channel (its orders)
        self.writer: Any = None
        self.channel: Any = None
        self._actions: deque[Action] = deque()
        self._actions_ready = trio.Event()
        self._timers_changed = trio.Event()
        self._commit_moved = trio.Event()
        self._inbound: dict[int, _Inbound] = {}
        #: requests handed on by connections, waiting for the quorum's task (`_serve_inbound`)
        self._queue: deque[Pending] = deque()
        self._identity_log = RateLimitedLogger(log)  # refused voter claims, logged sparsely
        self._queue_ready = trio.Event()
        self._room = trio.Event()
        self._ids = itertools.count(1)
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
        self.metrics: Any = None
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
                if self.metrics is not None:
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
                nursery.start_soon(self._serve_inbound)
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
            inbound = self._inbound.pop(action.correlation_id, None)
            if inbound is not None:
                await self._answer(inbound, action.response)
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
                if self.metrics is not None:
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

    # ------------------------------------------------------------------ inbound
    @property
    def queued(self) -> int:
        """Requests waiting for the quorum's task (a metric)."""
        return len(self._queue)

    def submit(self, pending: Pending) -> bool:
        """A quorum RPC from a connection (the daemon routes `QUORUM_API_KEYS` here), queued for the
        quorum's task; False when the queue is full (the connection waits with `wait_for_room`)."""
        if len(self._queue) >= INBOUND_QUEUE_LIMIT:
            return False
        self._queue.append(pending)
        self._queue_ready.set()
        return True

    async def wait_for_room(self) -> None:
        while len(self._queue) >= INBOUND_QUEUE_LIMIT:
            self._room = trio.Event()
            await self._room.wait()

    async def _serve_inbound(self) -> None:
        while True:
            while not self._queue:
                self._queue_ready = trio.Event()
                await self._queue_ready.wait()
            pending = self._queue.popleft()
            self._room.set()
            try:
                if len(pending.payload) > LARGE_FRAME_BYTES and not self._describes_this_partition(pending):
                    await self._answer_large(pending)
                else:
                    self._receive(pending)
            except LogError:
                raise
            except Exception as exc:  # a bug on one request: refuse it, serve the others
                self._failed_request(pending, exc)
            await trio.lowlevel.checkpoint()

    def _describes_this_partition(self, pending: Pending) -> bool:
        request = pending.request
        assert request is not None
        topics: Any = getattr(request.body, "topics", ())
        return request.api_key == ApiKey.DESCRIBE_QUORUM and len(topics) == 1 and len(topics[0].partitions) == 1

    async def _answer_large(self, pending: Pending) -> None:
        """A request over a megabyte: whatever it names beyond `__cluster_metadata-0` makes it an
        error answer that depends on the request alone (refused by the authorizer or the wire
        mapping, or DescribeQuorum's per-partition UNKNOWN_TOPIC_OR_PARTITION), built and encoded
        in a worker thread, so that answering millions of entries never holds the event loop.
        One about the metadata partition alone (a large one is all padding) is answered as usual."""
        request = pending.request
        assert request is not None
        if request.api_key != ApiKey.DESCRIBE_QUORUM:
            self._receive(pending)  # the wire mapping refuses it at once (more than one partition)
            return
        authorizer = self.engine.authorizer
        if authorizer is not None and authorize_api(authorizer, request_context(pending), request.api_key) is not None:
            self._receive(pending)  # the denial lists nothing per partition
            return
        node, voters, now_ms, wall_ms = self.node, self.config.voters, self._clock_ms(), self._wall_ms()

        def build() -> tuple[bytes, int]:
            answer = describe_quorum(node, request.body, request.api_version, voters, now_ms, wall_ms)
            return encode_response(answer, request.api_version, request.correlation_id), response_error_code(answer)

        frame, code = await trio.to_thread.run_sync(build)
        pending.answer(frame, code)

    def _receive(self, pending: Pending) -> None:
        request = pending.request
        assert request is not None
        key, version, body = request.api_key, request.api_version, request.body
        authorizer = self.engine.authorizer
        if authorizer is not None:  # CLUSTER_ACTION (DESCRIBE for DescribeQuorum), as Kafka's ControllerApis
            context = request_context(pending)
            if authorize_api(authorizer, context, key) is not None:
                if self.writer is not None:
                    self.writer.denied(api(key).name, context, pending.peer)
                self._respond(pending, denied_answer(key, version, body, context))
                return
        if key == ApiKey.DESCRIBE_QUORUM:
            answer = describe_quorum(self.node, body, version, self.config.voters, self._clock_ms(), self._wall_ms())
            self._respond(pending, answer)
            return
        try:
            message = wire.request_from_wire(key, version, body)
        except wire.WireRefusal as refusal:
            self._respond(pending, refusal.response)
            return
        if not self._proven(pending, key, message):
            self._respond(pending, wire.top_level_error(key, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
            return
        correlation = next(self._ids)
        self._inbound[correlation] = _Inbound(pending, key, version, body)
        self._handle(RequestReceived(_source(message), correlation, message))  # answered by an action

    def _proven(self, pending: Pending, key: int, message: rm.Request) -> bool:
        """Whether the connection may speak for the voter the request names (always, without
        client authentication); a refusal is counted as an authorization denial."""
        identities = self.identities
        if identities is None:
            return True
        claimed = _source(message)
        why = identities.refusal(claimed, pending.principal)
        if why is None:
            return True
        if self.metrics is not None:
            self.metrics.authorization_denied(api(key).name, pending.principal)
        self._identity_log.log(
            logging.WARNING,
            f"{key} {pending.principal} {claimed}",
            "%s naming voter %d from %s refused: %s (a voter is who its certificate proves)",
            api(key).name,
            claimed,
            pending.peer,
            why,
        )
        return False

    def _failed_request(self, pending: Pending, exc: Exception) -> None:
        request = pending.request
        assert request is not None
        log.error(
            "quorum: %s v%d from %s failed (%s); answered UNKNOWN_SERVER_ERROR: %s",
            api(request.api_key).name,
            request.api_version,
            pending.peer,
            _summary(request.body),
            exc,
            exc_info=exc,
        )
        if self.metrics is not None:
            self.metrics.request_failed("raft")
        for correlation, inbound in list(self._inbound.items()):
            if inbound.pending is pending:
                del self._inbound[correlation]
        if not pending.resolved:
            self._respond(pending, wire.top_level_error(request.api_key, ErrorCode.UNKNOWN_SERVER_ERROR))

    async def _answer(self, inbound: _Inbound, response: rm.Response) -> None:
        records: bytes | None = None
        chunk: tuple[int, int, bytes] | None = None
        if isinstance(response, rm.FetchResponse) and response.records_from_offset is not None:
            partition_max, request_max = wire.fetch_limits(inbound.body)
            limit = max(1, min(partition_max, request_max, FETCH_MAX_BYTES))
            try:
                read = await trio.to_thread.run_sync(self.log.read_records, response.records_from_offset, limit)
                records = read.records
            except (LogError, ValueError, OffsetOutOfRangeError) as exc:
                # retention, a truncation, or records the writer has not written yet: the next
                # fetch starts over (the core's log end passes the disk's while a batch is written)
                log.debug("no records for a fetch from %d: %s", response.records_from_offset, exc)
        elif isinstance(response, rm.FetchSnapshotResponse) and response.snapshot_id is not None and not response.error:
            position, max_bytes = wire.snapshot_position(inbound.body)
            snapshot = SnapshotId(response.snapshot_id.offset, response.snapshot_id.epoch)
            try:
                read_chunk = await trio.to_thread.run_sync(
                    self.log.read_snapshot_chunk, snapshot, position, max(1, min(max_bytes, FETCH_MAX_BYTES))
                )
                chunk = (read_chunk.size, position, read_chunk.data)
            except (LogError, ValueError, SnapshotNotFoundError, PositionOutOfRangeError) as exc:
                log.info("snapshot %s at %d unavailable: %s", snapshot, position, exc)
                error = (
                    ErrorCode.POSITION_OUT_OF_RANGE
                    if isinstance(exc, PositionOutOfRangeError)
                    else ErrorCode.SNAPSHOT_NOT_FOUND
                )
                response = rm.FetchSnapshotResponse(error, response.leader_id, response.leader_epoch)
        self._respond(inbound.pending, wire.response_to_wire(response, records=records, snapshot_chunk=chunk))

    def _respond(self, pending: Pending, response: Data) -> None:
        request = pending.request
        assert request is not None
        try:
            frame = encode_response(response, request.api_version, request.correlation_id)
        except Exception:
            log.exception("cannot encode the answer to api key %d from %s", request.api_key, pending.peer)
            if self.metrics is not None:
                self.metrics.request_failed("encode")
            pending.close_unanswered()
            return
        pending.answer(frame, response_error_code(response))  # the request's connection sends it

    # ------------------------------------------------------------------ from the links
    def received(self, source: int, correlation_id: int, response: rm.Response) -> None:
        try:
            self._handle(ResponseReceived(NodeId(source), correlation_id, response))
        except Exception as exc:  # a bug on one answer: the core is as before it; the request failed
            log.error("quorum: voter %d's answer failed (%s): %s", source, type(response).__name__, exc, exc_info=exc)
            if self.metrics is not None:
                self.metrics.request_failed("raft")
            self.failed(source, correlation_id)

    def failed(self, destination: int, correlation_id: int) -> None:
        self._handle(RequestFailed(NodeId(destination), correlation_id))


def _summary(body: object, limit: int = 300) -> str:
    text = repr(body)
    return text if len(text) <= limit else text[:limit] + "..."


def _source(message: rm.Request) -> NodeId:
    """Who sent a request (the core answers by node id; the wire answer goes on its connection)."""
    if isinstance(message, rm.VoteRequest):
        return message.candidate_id
    if isinstance(message, rm.BeginQuorumEpochRequest | rm.EndQuorumEpochRequest):
        return message.leader_id
    return message.replica_id
