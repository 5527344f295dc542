"""The group-commit writer: every request, from every connection, decided in arrival order and
answered only once its records are durable.

Rules:
- One writer task decides. It takes the first waiting request and everything queued behind it
  (a group), decides them in order (each sees the ones before), then commits them, by the one
  commit path: `engine.commit()` takes what was decided and encodes it on the event loop, the
  writer's `Durability` writes the batches (one write and one fsync, in a worker thread, by the
  log's one writer: the Raft driver) while the next group is decided, and says when they are
  committed (durable on the commit quorum: for a single voter, that fsync). Only then are the group's requests
  answered and the control orders their records call for handed to the channel.
- Replication is pipelined: a commit's batches are written once the previous commit's are
  (so the log order is the decision order), not once it is committed; up to
  `MAX_COMMITS_IN_FLIGHT` commits wait for the quorum at once, and their answers and orders
  leave in the log's order, each after the commits before it.
- The writer never touches a connection: it resolves each request's outcome (`Pending.answer`
  with the encoded response frame, or `close_unanswered`), and the request's connection, which
  awaits it, sends the frame or closes.
- A commit that will never be committed (the node lost its leadership before a majority held
  it) answers nothing: its requests' connections are closed unanswered, never answered NONE.
- The writer's task is the engine's one driver: the quorum's work on the engine (a standby's
  replay of what is committed, a step of at most `quorum.REPLAY_STEP_RECORDS` records at a time;
  activation; resignation) comes through the same queue as the requests (`apply`) and runs in
  its turn, so requests are answered between two replay steps.
- Leadership ends between two steps of the writer (the quorum's resignation step resigns the
  engine, whose `term` moves on). Work decided under the old term is abandoned at its next step:
  a decision in steps stops (its request closes unanswered, the rest of its records never reach
  the state the engine went back to), and a commit taken from the engine is never encoded or
  written (nor appended: a commit carries its epoch, which the quorum must still lead). A commit
  counts as in flight from the moment it is taken, so `quiesce`, which resignation awaits,
  returns only once no commit of the old term can still touch the log. Whatever was written
  stays in the local log, committed or not, until a new leader truncates it.
- No step holds the event loop for long: a decision's replay, the further steps of an operation
  decided in steps, and a commit's encoding run as paced slices (`controller.slices`), and the
  writer lets other tasks run between slices. Once an operation in steps has staged
  `engine.commit_records` records, what is decided so far is committed while the operation goes
  on (at the `COMMIT_POINT` the engine yields between batches), so memory stays bounded; its
  request is answered with the commit of its last batch.
- A failed commit is fatal (`LogError` escapes): the state is ahead of the disk.
- A request whose decision raises, or whose answer cannot be encoded, is logged, counted
  (`request_failed`, by stage) and its connection closed unanswered; the writer goes on with the
  rest of its group and the daemon with every other connection. An answer that fails to encode
  was decided and committed: its client learns nothing, as when a connection drops before the
  answer.
- Snapshots: once `snapshot_bytes` of log were appended since the last one, the writer lets the
  commit in flight land (the state then equals the log), freezes the state (milliseconds) and
  goes on deciding while a task of its own encodes the snapshot in slices and writes it from a
  worker thread. A failed snapshot leaves the
  log as it was: it is logged, counted, and retried after a growing delay.
- Authorization: with an authorizer (`engine.authorizer`), each request is decided in the name
  of its connection's principal and host (`RequestContext`; the host as Java prints it); a
  standby checks the API's cluster operation before answering NOT_CONTROLLER, as Kafka's
  controller checks before forwarding. Every refusal goes to `Denials` (counted, logged
  sparsely). Without one, requests go on as before, with no context built.
- Heartbeats have a deadline (Kafka's): a broker heartbeat still queued half a heartbeat interval
  after it came is answered REQUEST_TIMED_OUT at once and its broker's session kept
  (`heartbeat_deadlines`), so no broker waits longer for an answer behind long work, nor is
  fenced for it; the broker retries. One the writer reaches is decided, however late.
- `drain` (shutdown) answers what is queued and in flight, up to a deadline, then stops
  deciding and waits for the commit in flight and the snapshot being written to finish: the
  log may be closed only after `drain` returns.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import trio

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode, response_error_code
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.registry import api, encode_response
from protocol.spec import Data

from .. import collector
from ..control.orders import ControlOrder
from ..core import denied_answer
from ..engine import Commit, ControllerEngine
from ..log import LogError
from ..ops.authorization import DEFAULT_CONTEXT, authorize_api
from ..ops.not_controller import not_controller
from ..runtime import in_thread, monotonic_ns
from ..slices import Done, NotLeading, Slices, Work, run_paced
from .denials import Denials
from .durability import Durability, SoleVoter
from .heartbeat_deadlines import DEFAULT_HEARTBEAT_INTERVAL_MS, HeartbeatDeadlines
from .pending import LARGE_FRAME_BYTES, Pending, request_context
from .writer_snapshots import SnapshotMetrics, WriterSnapshots

log = logging.getLogger("fencer.writer")
T = TypeVar("T")


class _Tick:
    """A session-timer wake-up in the queue, and when it fired: sessions are judged at that time,
    not when the writer reaches it, so that a broker whose heartbeat reached the queue in time
    is never fenced for the writer's own delay behind long work (a controlled shutdown of
    166,700 leaderships keeps the writer 13 s, longer than a session)."""

    __slots__ = ("at_ns",)

    def __init__(self, at_ns: int) -> None:
        self.at_ns = at_ns


class _Step:
    """The quorum's work on the engine, waiting in the queue (`Writer.apply`)."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[[], Awaitable[None]]) -> None:
        self.run = run


#: commits written and waiting for the quorum at once; the next group waits for the oldest
MAX_COMMITS_IN_FLIGHT = 16


class WriterMetrics(SnapshotMetrics, Protocol):
    def group_commit(self, batches: int, records: int, append_seconds: float) -> None: ...
    def request_failed(self, stage: str) -> None: ...
    def authorization_denied(self, api: str, principal: str) -> None: ...
    def heartbeat_timed_out(self) -> None: ...


class OrderSink(Protocol):
    def submit(self, orders: Sequence[ControlOrder]) -> None: ...


class Writer(WriterSnapshots):
    def __init__(
        self,
        engine: ControllerEngine,
        channel: OrderSink,
        metrics: WriterMetrics,
        *,
        clock: Callable[[], float],
        durability: Durability | None = None,
        denials: Denials | None = None,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
    ) -> None:
        """`heartbeat_interval_ms`: the brokers' heartbeat interval (Kafka's
        broker.heartbeat.interval.ms); a heartbeat not decided within half of it is timed out."""
        self.engine = engine
        #: the authorizer's refusals, counted and logged (shared with the quorum's RPCs)
        self.denials = denials or Denials(metrics)
        self.durability: Durability = durability or SoleVoter(engine.config.node_id)
        self._channel = channel
        self._metrics: WriterMetrics = metrics
        self._clock = clock  # monotonic seconds, for the snapshot retry delay
        #: requests (and timer ticks) waiting for the writer, in arrival order; `_arrived` wakes it
        self._queue: deque[Any] = deque()
        self._arrived: trio.Event | None = None
        self._in_flight = 0  # submitted, not yet answered
        self._heartbeats = HeartbeatDeadlines(heartbeat_interval_ms * 1_000_000 // 2)
        self._idle = trio.Event()
        self._answered: list[Pending] = []  # decided by the active controller since the last flush
        self._answered_term = 0  # the engine's term they were decided in
        #: answers that depend on no commit (a standby's NOT_CONTROLLER, any ApiVersions): sent at
        #: the next flush, never behind a commit in flight (a voter's handshake must not wait on one)
        self._free_answers: list[Pending] = []
        #: set when the newest commit has finished (committed and answered, or never to be)
        self._previous: trio.Event | None = None
        #: set when the newest commit's batches are written (or were never to be): the next may go
        self._written: trio.Event | None = None
        self._committing: deque[trio.Event] = deque()  # the commits in flight, oldest first
        self._nursery: trio.Nursery | None = None
        self._deciding = trio.CancelScope()
        self._stopped = trio.Event()
        self.draining = False
        self._init_snapshots()

    # ------------------------------------------------------------------ what others call
    def submit(self, pending: Pending) -> None:
        """Queue a request (never blocks, no checkpoint)."""
        self._in_flight += 1
        request = pending.request
        if request is not None and request.api_key == ApiKey.BROKER_HEARTBEAT and self.engine.active:
            self._heartbeats.waiting(pending)
        self._enqueue(pending)

    def apply(self, step: Callable[[], Awaitable[None]]) -> None:
        """Work on the engine that the quorum asks for (a standby's replay, activation,
        resignation), run on this task in its turn among the requests: one task drives the engine."""
        self._enqueue(_Step(step))

    def tick(self) -> None:
        """A session may have expired: fence whoever is due, as the next write."""
        if not self.draining:
            self._enqueue(_Tick(monotonic_ns()))

    async def quiesce(self) -> None:
        """Wait until the commits in flight (if any) have finished: their writes have landed or
        were never made (the quorum lets the log change hands only then)."""
        while self._committing:
            await self._committing[0].wait()

    def begin_drain(self) -> None:
        """Shutdown begins: connections submit nothing more (what is submitted is still answered)."""
        self.draining = True

    async def drain(self, timeout_s: float) -> None:
        """Answer what was submitted (up to `timeout_s`), then stop; returns once no commit or
        snapshot is in progress (those cannot be cut short: their threads must finish)."""
        self.begin_drain()
        with trio.move_on_after(timeout_s):
            while self._in_flight > 0:
                self._idle = trio.Event()
                await self._idle.wait()
        if self._in_flight:
            log.warning("stopping with %d requests unanswered after %.1f s", self._in_flight, timeout_s)
        self._deciding.cancel()
        await self._stopped.wait()

    # ------------------------------------------------------------------ the writer task
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:  # commits and the snapshot run here
                self._nursery = nursery
                watching = trio.CancelScope()
                nursery.start_soon(self._watch_heartbeats, watching)
                task_status.started()
                with self._deciding:
                    while True:
                        group = await self._take_group()
                        await self._maybe_snapshot()
                        with collector.long_work:  # no full pass of the cyclic collector meanwhile
                            await self._decide(group)
                        await self._flush()
                watching.cancel()  # deciding stopped: nothing more to time out
        finally:
            self._stopped.set()

    async def _watch_heartbeats(self, scope: trio.CancelScope) -> None:
        with scope:
            await self._heartbeats.run(self._time_out)

    def _enqueue(self, item: Any) -> None:
        self._queue.append(item)
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None

    async def _take_group(self) -> list[Any]:
        """Everything queued, in arrival order, once there is something (a plain deque and one
        event per wait: a memory channel costs more per item than the rest of the hand-over)."""
        while not self._queue:
            self._arrived = trio.Event()
            await self._arrived.wait()
        await trio.lowlevel.checkpoint()  # a group is a scheduling point
        group = list(self._queue)
        self._queue.clear()
        return group

    async def _decide(self, group: list[Any]) -> None:
        engine = self.engine
        for item in group:
            if type(item) is _Step:
                await item.run()
                continue
            if type(item) is _Tick:
                if engine.active:
                    with contextlib.suppress(NotLeading):  # the next term's own ticks fence on time
                        await self._complete(engine.expire_sessions(item.at_ns))
                continue
            pending: Pending = item
            if pending.resolved:  # a heartbeat timed out while it waited
                continue
            self._heartbeats.taken(pending)
            request = pending.request
            assert request is not None
            # answered at once (no commit to wait for): a standby's refusal, any ApiVersions
            free = not engine.active or request.api_key == ApiKey.API_VERSIONS
            try:
                work: Work[Data | None]
                authorizer = engine.authorizer
                context = DEFAULT_CONTEXT if authorizer is None else request_context(pending)
                if not engine.active and request.api_key != ApiKey.API_VERSIONS:
                    if authorize_api(authorizer, context, request.api_key) is not None:
                        self.denials.denied(api(request.api_key).name, context, pending.peer)
                        answer = denied_answer(request.api_key, request.api_version, request.body, context)
                    else:
                        leader = self.durability.leader_id
                        answer = not_controller(request.api_key, request.api_version, request.body, leader)
                    work = Done(answer)
                else:
                    now = monotonic_ns()
                    work = engine.decide(request.api_key, request.api_version, request.body, now, context=context)
                    if authorizer is not None:
                        for denial in engine.take_denials():
                            self.denials.denied(denial.api, context, pending.peer)
                # the common case: decided and staged at once, nothing to pace
                response = work.value if isinstance(work, Done) else await self._complete(work)
            except LogError:
                raise
            except NotLeading:  # leadership ended midway: the rest of the decision is abandoned
                self._never_committed([pending])
                continue
            except Exception:
                log.exception("cannot decide %s from %s", api(request.api_key).name, pending.peer)
                self._metrics.request_failed("decide")
                pending.close_unanswered()  # the connection closes unanswered
                self._finished(1)
                continue
            pending.decided_ns = monotonic_ns()
            pending.response = response
            if free:
                self._free_answers.append(pending)
                continue
            if self._answered and self._answered_term != engine.term:
                self._never_committed(self._answered)  # decided in a term that is over
                self._answered = []
            self._answered_term = engine.term
            self._answered.append(pending)

    async def _complete(self, work: Work[T]) -> T:
        """Run decided work to its end, letting other tasks run between its slices; where it asks
        (`COMMIT_POINT`: many records staged), commit what it staged so far first. `NotLeading`
        if the engine's term ends meanwhile (the work is abandoned at its next slice)."""
        term = self.engine.term
        return await run_paced(work, self._flush, lambda: self.engine.term == term)

    async def _flush(self) -> None:
        """Commit what is decided so far, after the commit in flight (so in decision order). The
        commit counts as in flight (`quiesce` waits for it) from the moment it is taken."""
        term = self.engine.term
        work = self.engine.commit()
        answered, self._answered = self._answered, []
        if answered and self._answered_term != term:
            self._never_committed(answered)  # decided in a term that is over
            answered = []
        done = trio.Event()
        if work is not None or answered:
            self._committing.append(done)
        free, self._free_answers = self._free_answers, []
        for pending in free:
            await self._answer(pending)
        self._finished(len(free))
        if work is None and not answered:
            return
        try:
            if self._written is not None:
                await self._written.wait()  # the log order is the decision order
            while len(self._committing) > MAX_COMMITS_IN_FLIGHT:
                await self._committing[0].wait()
        except BaseException:  # the writer stops (drain's deadline): this commit is never made
            self._committing.remove(done)
            done.set()
            for pending in answered:
                pending.close_unanswered()
            self._finished(len(answered))
            raise
        before, self._previous = self._previous, done
        written = self._written = trio.Event()
        assert self._nursery is not None
        self._nursery.start_soon(self._commit, work, answered, term, before, written, done)

    async def _commit(
        self,
        work: Slices[Commit] | None,
        answered: list[Pending],
        term: int,
        before: trio.Event | None,
        written: trio.Event,
        done: trio.Event,
    ) -> None:
        """The one commit path: encode, append and fsync locally (then the next commit may be
        written: replication is pipelined), wait until committed, then, once the commit before
        has answered, answer and send the control orders. Answers that carry no records (reads)
        wait for the commits before them, as their decisions saw those. Nothing of a term that
        is over is encoded or written."""
        try:
            try:
                commit = None
                if work is not None:
                    started = self._clock()
                    # encoding holds the GIL: here, in slices
                    commit = await run_paced(work, valid=lambda: self.engine.term == term)
                    if not await self.durability.write(commit, self.engine.write):
                        commit = None
                        raise NotLeading
                    if commit.records:
                        self._metrics.group_commit(
                            len(commit.prepared.batches), commit.records, self._clock() - started
                        )
                # what the answers depend on (an answer without records of its own, too: its
                # decision saw the commits before it, and a deposed leader must answer nothing)
                end = commit.end_offset if commit is not None else self.engine.log.next_offset
            finally:
                written.set()
            committed = await self.durability.committed(end)
            if before is not None:
                await before.wait()  # answers leave in the log's order
            if not committed:
                raise NotLeading
            for pending in answered:
                await self._answer(pending)
            self._finished(len(answered))
            if commit is not None and commit.orders:
                self._channel.submit(commit.orders)
        except NotLeading:
            self._never_committed(answered)
        finally:
            done.set()
            self._committing.remove(done)

    async def _time_out(self, pending: Pending, now_ns: int) -> None:
        """A heartbeat still waiting at its deadline: its session kept, answered REQUEST_TIMED_OUT
        at once (it decided nothing, so no commit is waited for), counted."""
        request = pending.request
        assert request is not None and isinstance(request.body, BrokerHeartbeatRequest)
        self.engine.heartbeat_timed_out(request.body, now_ns)
        pending.response = BrokerHeartbeatResponse(error_code=ErrorCode.REQUEST_TIMED_OUT)
        await self._answer(pending)
        self._finished(1)
        self._metrics.heartbeat_timed_out()

    def _never_committed(self, answered: list[Pending]) -> None:
        """Leadership was lost before a majority held these records: nobody may hear NONE."""
        log.warning("%d requests decided under a lost leadership: their connections close unanswered", len(answered))
        for pending in answered:
            pending.close_unanswered()
        self._finished(len(answered))

    async def _answer(self, pending: Pending) -> None:
        request, response = pending.request, pending.response
        assert request is not None and response is not None
        encode = functools.partial(encode_response, response, request.api_version, request.correlation_id)
        try:
            # a response is about as large as its request: a large one is encoded off the event loop
            large = len(pending.payload) > LARGE_FRAME_BYTES
            frame = await in_thread(encode) if large else encode()
        except Exception:  # a bug of the decision or the codec: this connection pays, not the daemon
            log.exception("cannot encode the answer to %s from %s", api(request.api_key).name, pending.peer)
            self._metrics.request_failed("encode")
            pending.close_unanswered()  # the connection closes unanswered
            return
        pending.answer(frame, response_error_code(response))  # its connection's task sends it

    def _finished(self, count: int) -> None:
        self._in_flight -= count
        if self._in_flight <= 0:
            self._idle.set()
