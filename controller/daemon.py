"""The controller daemon: a trio TCP server around the engine, with group commit, timers and shutdown.

Rules:
- One writer task applies every request, from all connections, in arrival order. It takes the
  first waiting request and everything that queued behind it, decides them in order (each sees
  the ones before), then commits them with one write and one fsync (in a worker thread, so
  requests keep arriving meanwhile: they form the next group), and only then answers them.
- Session-timeout fencing runs on a timer that wakes the writer; fencing is a write like any other.
- Control orders the core derives from committed records go to the outbound control channel
  (LeaderAndIsr / StopReplica to brokers); at start every live broker gets a full LeaderAndIsr
  in the new controller epoch.
- SIGTERM / SIGINT: stop accepting and reading, answer what is in flight, commit, flush the
  capture, close, return (exit 0). A failed commit is fatal: the state is ahead of the disk.
"""

from __future__ import annotations

import functools
import logging
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import trio

from protocol.registry import api, encode_response, peek_request

from .budget import MemoryBudget
from .channel import ControlChannel
from .connection import Connection, Pending
from .engine import ControllerEngine
from .logs import RateLimitedLogger
from .metrics import ControllerMetrics, response_error_code
from .outbound import ControlOrder, full_state_orders

log = logging.getLogger("fencer.daemon")
T = TypeVar("T")
_TICK = object()  # a session-timer wake-up in the writer's queue


@dataclass(frozen=True)
class DaemonOptions:
    host: str = "127.0.0.1"
    port: int = 9093
    max_frame_bytes: int = 104_857_600
    max_queued_bytes: int = 268_435_456
    idle_timeout_s: float = 600.0
    capture_dir: Path | None = None
    capture_rotate_s: float = 2.0
    metrics_host: str | None = None
    metrics_port: int = 0
    drain_timeout_s: float = 5.0


class Daemon:
    def __init__(self, engine: ControllerEngine, options: DaemonOptions) -> None:
        self.engine = engine
        self.options = options
        self.max_frame_bytes = options.max_frame_bytes
        self.idle_timeout_s = options.idle_timeout_s
        #: memory for requests across connections (`used` is what they hold now)
        self.budget = MemoryBudget(options.max_queued_bytes, largest_frame=options.max_frame_bytes)
        self._refusals = RateLimitedLogger(log)  # a flood of bad frames must not flood the log
        self.draining = False
        self.port: int | None = None
        #: requests (and timer ticks) waiting for the writer, in arrival order; `_arrived` wakes it
        self._queue: deque[Any] = deque()
        self._arrived: trio.Event | None = None
        self._connections: set[Connection] = set()
        self._listener_scope = trio.CancelScope()
        self._in_flight = 0
        self._idle = trio.Event()
        self.metrics = _make_metrics(self)
        self.capture = _make_capture(options)
        self._exchange: Any = None
        if self.capture is not None:
            from .capture import Exchange

            self._exchange = Exchange
        self.channel = _make_channel(self)

    # ------------------------------------------------------------------ running
    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_signals, nursery.cancel_scope)
            nursery.start_soon(self._writer)
            nursery.start_soon(self._session_timer)
            nursery.start_soon(self._sweep_idle)
            await nursery.start(self.channel.run)
            if self.capture is not None:
                nursery.start_soon(self._capture_flusher)
            if self.options.metrics_host is not None:
                from .http import serve_http

                await nursery.start(
                    serve_http,
                    self.options.metrics_host,
                    self.options.metrics_port,
                    self.metrics,
                    lambda: self.engine.core,
                )
            self.channel.submit(full_state_orders(self.engine.core.state))
            listeners = await trio.open_tcp_listeners(self.options.port, host=self.options.host)
            self.port = listeners[0].socket.getsockname()[1]
            nursery.start_soon(self._serve, listeners)
            task_status.started(self.port)

    async def _serve(self, listeners: list[trio.SocketListener]) -> None:
        with self._listener_scope:
            await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        await Connection(self, stream).run()

    async def _watch_signals(self, main_scope: trio.CancelScope) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("received %s: draining", signal.Signals(signum).name)
                await self.shutdown()
                main_scope.cancel()
                return

    async def shutdown(self) -> None:
        """Stop accepting and reading; answer and commit what is in flight; flush and close."""
        self.draining = True
        self._listener_scope.cancel()
        for connection in list(self._connections):
            connection.scope.cancel()  # stops reading; a request in flight is still answered
        with trio.move_on_after(self.options.drain_timeout_s):
            while self._in_flight:
                self._idle = trio.Event()
                await self._idle.wait()
        if self.capture is not None:
            await trio.to_thread.run_sync(self.capture.close)
        self.engine.close()
        log.info("stopped")

    # ------------------------------------------------------------------ connections call these
    def submit(self, pending: Pending) -> None:
        self._in_flight += 1
        self._enqueue(pending)

    def answered(self, pending: Pending) -> None:
        assert pending.request is not None or pending.frame is not None
        if pending.request is not None:
            now = time.monotonic_ns()
            header = pending.request.header
            code = _error_code(pending.response)
            self.metrics.request(
                header.request_api_key,
                header.request_api_version,
                code,
                (now - pending.received_ns) / 1e9,
                (pending.decided_ns - pending.received_ns) / 1e9,
            )
        self._capture(pending, pending.frame)

    def unanswered(self, pending: Pending) -> None:
        self._capture(pending, None)

    def invalid_frame(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None:
        self._refusals.log(logging.WARNING, reason, "closing connection from %s: %s (%s)", peer, reason, detail)
        self.metrics.invalid_frame(reason)

    def register(self, connection: Connection) -> None:
        self._connections.add(connection)
        if self.draining:
            connection.scope.cancel()

    def unregister(self, connection: Connection) -> None:
        self._connections.discard(connection)

    async def _sweep_idle(self) -> None:
        """Close connections idle for longer than the idle timeout (checked a few times per timeout)."""
        interval = min(1.0, self.idle_timeout_s / 3)
        while True:
            await trio.sleep(interval)
            now = trio.current_time()
            for connection in list(self._connections):
                if connection.idle_for(now) > self.idle_timeout_s:
                    log.info("closing idle connection %s from %s", connection.id, connection.peer)
                    connection.scope.cancel()

    def _capture(self, pending: Pending, frame: bytes | None) -> None:
        if self.capture is None or (pending.request is None and frame is None):
            return
        key, version, correlation = _identity(pending)
        self.capture.add(
            self._exchange(
                pending.received_wall_ns,
                time.time_ns() if frame is not None else None,
                "inbound",
                pending.connection_id,
                pending.peer,
                key,
                version,
                correlation,
                pending.payload,
                frame[4:] if frame is not None else None,
            )
        )

    # ------------------------------------------------------------------ the writer
    async def _writer(self) -> None:
        """Decide groups in arrival order; commit each while the next is being decided.

        At most one commit is in flight: group N+1 is decided (and its records staged and
        replayed) while group N's write and fsync run in a worker thread; N+1's commit starts
        once N's has finished, so the log order is the decision order."""
        async with trio.open_nursery() as nursery:
            previous: trio.Event | None = None
            while True:
                group = await self._take_group()
                if previous is not None and self.engine.log.bytes_since_snapshot >= self.engine.snapshot_bytes:
                    # a snapshot needs the state to equal the log: let the commit in flight land first
                    await previous.wait()
                    await self._snapshot()
                answered = self._decide(group)
                staged = self.engine.take_staged()
                orders = self.engine.take_orders()
                if previous is not None:
                    await previous.wait()
                previous = trio.Event()
                nursery.start_soon(self._commit, staged, answered, orders, previous)

    async def _snapshot(self) -> None:
        if self.engine.snapshot_due():
            taken = self.engine.snapshot_records()
            path = await trio.to_thread.run_sync(self.engine.write_snapshot, taken)
            log.info("wrote snapshot %s", path)

    def _enqueue(self, item: Any) -> None:
        """Queue for the writer (unbounded: never blocks, no checkpoint); wake it if it waits."""
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
        await trio.lowlevel.checkpoint()  # a group is a scheduling point, as a channel receive was
        group = list(self._queue)
        self._queue.clear()
        return group

    def _decide(self, group: list[Any]) -> list[Pending]:
        answered: list[Pending] = []
        for item in group:
            if item is _TICK:
                self.engine.expire_sessions(time.monotonic_ns())
                continue
            pending: Pending = item
            assert pending.request is not None
            request = pending.request
            try:
                response = self.engine.decide(request.api_key, request.api_version, request.body, time.monotonic_ns())
            except Exception:
                log.exception("cannot decide %s from %s", api(request.api_key).name, pending.peer)
                pending.connection.abandon(pending)  # the connection closes unanswered
                self._finished(1)
                continue
            pending.decided_ns = time.monotonic_ns()
            pending.response = response
            answered.append(pending)
        return answered

    async def _commit(
        self, staged: list[Any], answered: list[Pending], orders: list[ControlOrder], done: trio.Event
    ) -> None:
        try:
            if staged:
                started = time.monotonic()
                prepared = self.engine.prepare(staged)  # encoding holds the GIL: do it here, not in the thread
                records = await in_thread_now(self.engine.write, prepared)
                self.metrics.group_commit(len(staged), records, time.monotonic() - started)
            for pending in answered:
                assert pending.request is not None and pending.response is not None
                request = pending.request
                pending.frame = encode_response(pending.response, request.api_version, request.correlation_id)
                pending.connection.respond(pending)
            self._finished(len(answered))
            if orders:
                self.channel.submit(orders)
        finally:
            done.set()

    def _finished(self, count: int) -> None:
        self._in_flight -= count
        if self._in_flight <= 0:
            self._idle.set()

    async def _session_timer(self) -> None:
        while True:
            deadline = self.engine.core.next_session_deadline_ns()
            now = time.monotonic_ns()
            if deadline is not None and deadline < now:
                self._enqueue(_TICK)
                await trio.sleep(0.05)
                continue
            wait = 0.25 if deadline is None else min(0.25, (deadline - now) / 1e9 + 0.001)
            await trio.sleep(max(wait, 0.001))

    async def _flush_capture(self) -> None:
        """One part: its rows converted here in slices between requests, then written from a thread."""
        from .capture import from_batches, to_batches

        assert self.capture is not None
        part = self.capture.take()
        if part is None:
            return
        batches = []
        try:
            for batch in to_batches(part.rows):
                batches.append(batch)
                await trio.sleep(0)
        except Exception:
            self.capture.dropped(part)
            raise
        await trio.to_thread.run_sync(self.capture.write, part, from_batches(batches))

    async def _capture_flusher(self) -> None:
        assert self.capture is not None
        while True:
            await trio.sleep(min(0.5, self.options.capture_rotate_s))
            if self.capture.due():
                try:
                    await self._flush_capture()
                except Exception as exc:  # a full disk must not stop the controller: capture is best effort
                    log.error("capture flush failed, %d rows dropped so far: %s", self.capture.rows_dropped, exc)
                self.metrics.capture(self.capture.rows_written, self.capture.parts_written)


async def in_thread_now(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a worker thread that starts at once; its result or exception comes back here.

    Unlike `trio.to_thread.run_sync` there is no capacity limiter, whose checkpoint would send
    this task to the back of the run queue (behind a whole group's decisions) before the thread
    even starts. The wait cannot be cancelled: a started write or fsync must finish."""
    token = trio.lowlevel.current_trio_token()
    task = trio.lowlevel.current_task()

    def deliver(result: Any) -> None:  # an outcome.Outcome, which trio's reschedule unwraps
        token.run_sync_soon(trio.lowlevel.reschedule, task, result)

    trio.lowlevel.start_thread_soon(functools.partial(fn, *args), deliver)
    return await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)  # type: ignore[no-any-return]


def _error_code(response: Any) -> int:
    return response_error_code(response) if response is not None else 0


def _identity(pending: Pending) -> tuple[int, int, int]:
    if pending.request is not None:
        header = pending.request.header
        return header.request_api_key, header.request_api_version, header.correlation_id
    key, version, correlation = peek_request(pending.payload)
    return key, version, correlation if correlation is not None else -1


def _make_metrics(daemon: Daemon) -> ControllerMetrics:
    return ControllerMetrics(lambda: daemon.engine.core)


def _make_capture(options: DaemonOptions) -> Any:
    if options.capture_dir is None:
        return None
    from .capture import CaptureWriter

    return CaptureWriter(options.capture_dir, rotate_seconds=options.capture_rotate_s)


def _make_channel(daemon: Daemon) -> ControlChannel:
    def broker_address(broker_id: int) -> tuple[str, int, int] | None:
        broker = daemon.engine.core.state.cluster.get(broker_id)
        if broker is None or broker.fenced or not broker.listeners:
            return None
        listener = broker.listeners[0]
        return listener.host, listener.port, broker.epoch

    return ControlChannel(
        controller_id=daemon.engine.core.config.node_id,
        broker_address=broker_address,
        metrics=daemon.metrics,
        capture=daemon.capture,
    )
