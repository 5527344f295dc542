"""The controller bound to its quorum: activation, resignation, the hot standby, and the writer's
commit quorum. The Raft core is driven by `raft_driver` (network, clock, log); this is its
listener (Kafka's QuorumController as a RaftClient.Listener).

Rules:
- The leader appends its epoch's LeaderChange (the driver), and becomes the active controller
  once the high watermark passes it (everything before its epoch is then committed and replayed:
  Kafka's controller activates likewise), with the Raft epoch as its controller epoch, every
  broker's session afresh and a FULL LeaderAndIsr for every live broker.
- It then appends through the writer, which hands each commit to `write` (the core assigns its
  offsets, or refuses: the epoch is over; the driver writes it) and awaits `committed`: True once
  the high watermark passes the batch and the lease holds, False once the epoch is over.
- Events flow one way, from the driver up; what they ask of the engine (replay, activate,
  resign, reload) runs on the writer's task, in its queue's turn (`Writer.apply`): one task
  drives the engine, as Kafka's controller replays on its own event queue. Reads of the log run
  under the driver's `stable_log`, which a truncation or a snapshot install holds while it
  rewrites the log; an installed snapshot is taken in (the state rebuilt from it) before the
  engine next reads the log.
- A standby replays up to the high watermark as it moves (hot standby), `REPLAY_STEP_RECORDS` at
  a time so that requests are answered in between, snapshots its committed state as the active
  controller does, and takes a leader's snapshot when the driver installs one.
- When the node stops leading, the controller resigns at once: nothing more is decided,
  acknowledged or pushed in that epoch; held commits answer nothing (their connections close);
  queued control orders are dropped; no commit of the epoch is appended any more (a commit
  carries its epoch); then, in the writer's turn, its commits in flight land and the state goes
  back to what is committed.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import trio

from ..control.orders import ControlOrder
from ..engine import Commit, ControllerEngine
from ..engine_snapshots import EncodedSnapshot
from ..log import LogError
from ..raft import Epoch, OffsetAndEpoch, RaftError, RaftNode, Resign, SnapshotCreated, Tick
from ..raft.leader import Leader
from ..raft.state import Resigned
from ..runtime import in_thread, monotonic_ns
from ..runtime import wall_ms as runtime_wall_ms
from ..slices import NotLeading, Slices, run_paced
from .denials import Denials
from .quorum_config import QuorumConfig
from .raft_driver import DriverMetrics, RaftDriver
from .raft_inbound import RaftInbound
from .tls import TlsOptions

log = logging.getLogger("fencer.quorum")
#: how often a commit waiting for the lease (not for the high watermark) looks again
LEASE_RECHECK_S = 0.05
#: records a standby replays in one step of the writer's (about 20-40 ms here): requests in between
REPLAY_STEP_RECORDS = 1000


class QuorumMetrics(DriverMetrics, Protocol):
    def raft_commit(self, seconds: float) -> None: ...


class OrderSink(Protocol):
    """The control channel, as the quorum uses it."""

    def hold(self) -> None: ...
    def release(self, first: Sequence[ControlOrder]) -> None: ...
    def clear(self) -> object: ...


class ControllerWriter(Protocol):
    """The writer that commits through the quorum (`controller.server.writer.Writer`), the
    engine's one driver: the quorum's work on the engine runs on its task."""

    async def quiesce(self) -> None: ...
    def apply(self, step: Callable[[], Awaitable[None]]) -> None: ...


class _Uncounted:
    """The metrics of a quorum built without the daemon's: nothing is counted."""

    def request_failed(self, stage: str) -> None: ...
    def authorization_denied(self, api: str, principal: str) -> None: ...
    def raft_commit(self, seconds: float) -> None: ...
    def election(self, seconds: float) -> None: ...


class Quorum:
    """A controller quorum member: the Raft driver and the controller bound to it."""

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
        self.engine = engine
        self.log = engine.log
        self.channel = channel
        self.metrics: QuorumMetrics = metrics or _Uncounted()
        self._clock_ms = clock_ms or (lambda: int(trio.current_time() * 1000))
        self.driver = RaftDriver(
            config,
            engine,
            self,
            rng=rng or random.Random(),
            clock_ms=self._clock_ms,
            wall_ms=wall_ms or runtime_wall_ms,
            tls=tls,
            metrics=self.metrics,
            denials=denials or Denials(self.metrics),
        )
        #: the writer that commits through this quorum (given to `run`): resigns with the node
        self._writer: ControllerWriter | None = None
        self._commit_moved = trio.Event()
        #: (epoch, the offset the high watermark must pass) while becoming the active controller
        self._activating: tuple[int, int] | None = None
        #: the epoch this node is the active controller of, else None
        self.active_epoch: int | None = None
        self.high_watermark: int | None = None
        #: set once this node first became the active controller
        self.activated = trio.Event()
        self._snapshotting = False
        self._replay_queued = False  # a standby's replay step waits in the writer's queue
        self._installed = False  # the leader's snapshot replaced the log: the engine reloads first

    # ------------------------------------------------------------------ what others read
    @property
    def node(self) -> RaftNode:
        return self.driver.node

    @property
    def inbound(self) -> RaftInbound:
        return self.driver.inbound

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

    # ------------------------------------------------------------------ running
    async def run(
        self, writer: ControllerWriter | None = None, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the driver; `writer` commits through this quorum (built after it, with it as its
        commit quorum) and runs what the quorum asks of the engine (`Writer.apply`)."""
        self._writer = writer
        await self.driver.run(task_status=task_status)

    async def hand_over(self) -> None:
        """A graceful stop's first step (Kafka's `KafkaRaftClient.shutdown`): a leader resigns its
        epoch and sends EndQuorumEpoch to the other voters, then waits, up to one fetch timeout,
        until another voter leads (or no other voter is left to tell), so that the quorum elects at
        once rather than after its followers' fetch timeout. Nothing for a node that does not lead."""
        state = self.node.state
        if not isinstance(state, Leader) or self.config.single:
            return
        self.driver.handle(Resign(state.epoch))
        with trio.move_on_after(self.config.fetch_timeout_ms / 1000):
            while self.node.epoch == state.epoch:
                await trio.sleep(0.005)

    async def stop(self) -> None:
        """Stop the driver (its log work in flight finished): the log can then be closed."""
        await self.driver.stop()

    # ------------------------------------------------------------------ the writer's commit quorum
    def _leader_epoch(self) -> int | None:
        """The epoch this node actively controls and still leads, once the core has seen the
        time (a node paused past its check-quorum deadline resigns here, before appending more)."""
        epoch = self.active_epoch
        if epoch is None:
            return None
        self.driver.handle(Tick())
        state = self.node.state
        return epoch if isinstance(state, Leader) and state.epoch == epoch else None

    async def write(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        """The active controller's batches, written by the driver (the log's one writer) once the
        core gave them their offsets; False while this node does not lead their epoch."""
        epoch = self._leader_epoch()
        if epoch is None or epoch != commit.epoch:
            return False  # decided in an epoch this node no longer leads (or leads no more)
        if commit.records <= 0:
            return True  # nothing to write (orders only)
        return await self.driver.write_leader_batches(commit, write)

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        """The writer (or a standby, `_standby_snapshot`) wrote a snapshot of committed state:
        the core may serve it to lagging followers, and its log now starts there."""
        try:
            self.driver.handle(SnapshotCreated(OffsetAndEpoch(end_offset, Epoch(epoch))))
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
            if self.high_watermark is not None and self.high_watermark >= end_offset and self.driver.lease_holds(state):
                self.metrics.raft_commit((self._clock_ms() - started) / 1000)
                return True
            with trio.move_on_after(LEASE_RECHECK_S):  # the lease comes back with the next fetches
                await self._commit_moved.wait()
            self.driver.handle(Tick())

    def _moved(self) -> None:
        """Wake the commits waiting in `committed`: the high watermark moved, or the epoch ended."""
        self._commit_moved.set()
        self._commit_moved = trio.Event()

    # ------------------------------------------------------------------ the driver's listener
    def led(self, epoch: int, start_offset: int) -> None:
        self._activating = (epoch, start_offset + 1)

    def committed_to(self, offset: int) -> None:
        self.high_watermark = offset
        self._moved()
        activating = self._activating
        if activating is not None and offset >= activating[1]:
            self._activating = None  # its LeaderChange is committed: become the active controller
            self._on_engine(lambda: self._activate(*activating))
        elif self.active_epoch is None:
            self._replay_soon()

    def snapshot_loaded(self) -> None:
        """The log was replaced by the leader's snapshot (the driver holds the log stable): the
        engine rebuilds its state from it at its next step, before it reads the log again."""
        self._installed = True
        self._replay_soon()

    async def leadership_ended(self, epoch: int) -> None:
        self._activating = None
        was_active = self.active_epoch is not None
        self.active_epoch = None
        self._moved()  # held commits learn that they never will be
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
        self._on_engine(self._resign)

    # ------------------------------------------------------------------ on the writer's task
    def _on_engine(self, step: Callable[[], Awaitable[None]]) -> None:
        """Work on the engine, done by the writer's task in its turn (the engine's one driver)."""
        assert self._writer is not None, "the quorum runs with its writer"
        self._writer.apply(step)

    def _replay_soon(self) -> None:
        if not self._replay_queued:
            self._replay_queued = True
            self._on_engine(self._replay_step)

    async def _replay_step(self) -> None:
        """A standby replays what is committed, `REPLAY_STEP_RECORDS` at a time (requests are
        answered between two steps); then snapshots if one is due."""
        self._replay_queued = False
        if not self._standby():
            return
        async with self.driver.stable_log():  # awaited: the node may have become active meanwhile
            await self._reload_if_installed()
            if not self._standby() or self.high_watermark is None:
                return
            committed = min(self.high_watermark, self.log.next_offset)
            await run_paced(self.engine.catch_up(min(committed, self.engine.applied + REPLAY_STEP_RECORDS)))
        if self.engine.applied < min(self.high_watermark, self.log.next_offset):
            self._replay_soon()
        else:
            self._maybe_standby_snapshot()

    def _standby(self) -> bool:
        return self.active_epoch is None

    async def _reload_if_installed(self) -> None:
        if self._installed:
            self._installed = False
            await self._reload()

    async def _reload(self) -> None:
        """The state rebuilt from the newest snapshot (the caller holds the log still): built in a
        worker thread (a million partitions take seconds: the event loop, its Raft RPCs and
        connections go on meanwhile), swapped in here. Until then the engine, a standby that
        decides nothing, keeps its old state for its readers (`/state`, the metrics)."""
        fresh = await in_thread(self.engine.fresh_core)
        self.engine.install(fresh)
        snapshot = fresh[1].snapshot
        log.info(
            "node %d rebuilt its state from %s (%d records)",
            self.config.node_id,
            "no snapshot" if snapshot is None else f"snapshot {snapshot.end_offset}-{snapshot.epoch}",
            fresh[1].records,
        )

    async def _resign(self) -> None:
        """This node's epoch is over: its commits in flight land (or are refused), the state goes
        back to what is committed, and the standby replays on."""
        assert self._writer is not None
        await self._writer.quiesce()
        if self.engine.stand_down():  # it was active: what it decided may be truncated away
            async with self.driver.stable_log():
                await self._reload()
        self._replay_soon()

    async def _activate(self, epoch: int, start: int) -> None:
        """The LeaderChange of `epoch` is committed: replay the whole log, become the active
        controller; the writer commits what activation staged (an abort, bootstrap records) with
        the requests around it."""
        engine = self.engine
        async with self.driver.stable_log():
            await self._reload_if_installed()
            await run_paced(engine.catch_up(self.log.next_offset))
        if not self.node.is_leader or self.node.epoch != epoch:
            return  # lost meanwhile
        aborted_before = engine.startup.aborted
        engine.activate(monotonic_ns())
        if engine.startup.aborted is not None and engine.startup.aborted != aborted_before:
            log.warning("%s", engine.startup.aborted)
        self.active_epoch = epoch
        self.activated.set()
        log.info("node %d is the active controller of epoch %d", self.config.node_id, epoch)
        if self.channel is not None:  # the orders decided from now on wait behind the full state
            self.channel.hold()
            work = engine.full_state_orders()
            self.driver.spawn(lambda: self._send_full_state(epoch, work))

    async def _send_full_state(self, epoch: int, work: Slices[list[ControlOrder]]) -> None:
        """Build the full LeaderAndIsr of `epoch`'s activation in slices (a million partitions take
        seconds: the event loop, the writer and Raft go on meanwhile) and send it ahead of the
        orders held since; abandoned once the epoch is over (`clear` dropped what was held)."""
        assert self.channel is not None
        try:
            orders = await run_paced(work, valid=lambda: self.active_epoch == epoch)
        except NotLeading:
            return
        self.channel.release(orders)

    # ------------------------------------------------------------------ the standby's snapshots
    def _maybe_standby_snapshot(self) -> None:
        """A standby snapshots its committed state as the active controller does (every
        `--snapshot-bytes` of log), so that retention bounds its log too."""
        engine = self.engine
        if self._snapshotting or not engine.snapshot_wanted:
            return
        work = engine.standby_snapshot()
        if work is not None:
            self._snapshotting = True
            self.driver.spawn(lambda: self._standby_snapshot(work))

    async def _standby_snapshot(self, work: Slices[EncodedSnapshot]) -> None:
        try:
            encoded = await run_paced(work)
            await in_thread(self.engine.write_snapshot, encoded)
        except LogError:
            raise
        except Exception as exc:  # the log is intact: the next high watermark tries again
            log.error("standby snapshot failed: %s", exc)
        else:
            log.info("wrote standby snapshot %d-%d", encoded.end_offset, encoded.epoch)
            self.snapshot_created(encoded.end_offset, encoded.epoch)
        finally:
            self._snapshotting = False
