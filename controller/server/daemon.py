"""The controller daemon: a trio TCP server around the engine: wiring, accepting, timers, shutdown.

Rules:
- Requests go to the group-commit writer (`controller.server.writer`), which decides them in arrival
  order and answers each once its records are committed; the quorum's RPCs go to the quorum's
  inbound side (`controller.server.raft_inbound`), which every node runs, a sole voter included
  (it leads at once, and listens only once it is the active controller).
- With `tls`, the listener is TLS-only: each accepted socket is wrapped in a server-side
  `trio.SSLStream`, whose handshake the connection's own task runs (`controller.server.tls`).
- Connections: at most `max_connections` at once (Kafka's max.connections); past it a new one
  is closed at once and counted. When accept fails for lack of descriptors or memory it is
  retried every 100 ms, logged at most once per interval. Handlers run in a nursery of their
  own, outside the accepting scope (hypercorn's trio worker), so that stopping to accept never
  cancels a request in flight.
- Session-timeout fencing runs on a timer that wakes the writer; fencing is a write like any other.
- Control orders derived from committed records go to the outbound control channel
  (LeaderAndIsr / StopReplica); once elected, every live broker gets a full LeaderAndIsr in the
  new controller epoch.
- SIGTERM / SIGINT: stop accepting and reading, answer what was read (up to a deadline), let
  every commit and snapshot in progress finish, flush the capture (a failure there is logged,
  never fatal: capture is best effort), close the log, exit 0. A failed commit is fatal.
"""

from __future__ import annotations

import errno
import functools
import logging
import random
import resource
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from protocol.capture import from_batches, to_batches

from ..control.channel import ControlChannel
from ..engine import ControllerEngine
from ..runtime import in_thread, monotonic, monotonic_ns
from .budget import MemoryBudget
from .connection import Connection
from .denials import Denials
from .exchanges import ExchangeRecorder
from .heartbeat_deadlines import DEFAULT_HEARTBEAT_INTERVAL_MS
from .listen import bound_port, open_listeners
from .metrics import ControllerMetrics
from .pending import Pending
from .quorum import Quorum
from .quorum_config import QuorumConfig, Voter
from .raft_inbound import QUORUM_API_KEYS, RaftInbound
from .tls import DEFAULT_MAPPING_RULES, TlsOptions
from .writer import Writer

log = logging.getLogger("fencer.daemon")
#: accept() errors that mean "no resources right now": retried, never fatal (trio's own list)
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_RETRY_S = 0.1
#: Descriptors kept for everything but inbound connections: log segments, snapshots, capture,
#: the metrics listener, worker threads' files; the rest is shared with outbound connections.
RESERVED_DESCRIPTORS = 256


def default_max_connections() -> int:
    """Half of what the descriptor limit leaves after `RESERVED_DESCRIPTORS` (the other half is
    for the control channel's connections, one per broker), at least 16."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, (soft - RESERVED_DESCRIPTORS) // 2)


@dataclass(frozen=True)
class DaemonOptions:
    host: str = "127.0.0.1"
    port: int = 9093
    max_frame_bytes: int = 104_857_600
    max_queued_bytes: int = 268_435_456
    idle_timeout_s: float = 600.0
    max_connections: int | None = None  # None: `default_max_connections()`
    capture_dir: Path | None = None
    capture_rotate_s: float = 2.0
    metrics_host: str | None = None
    metrics_port: int = 0
    drain_timeout_s: float = 5.0
    tls: TlsOptions | None = None  # the listener is TLS-only with these
    #: Kafka's broker.heartbeat.interval.ms: a heartbeat not decided within half of it is timed out
    broker_heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    #: SIGTERM/SIGINT drain the daemon (False: its host decides, as a simulation of several in one process)
    handle_signals: bool = True


class RequestRouter:
    """Where a connection's requests go: the quorum's RPCs to the quorum, the rest to the writer."""

    def __init__(self, writer: Writer, raft: RaftInbound) -> None:
        self.writer = writer
        self.raft = raft

    @property
    def draining(self) -> bool:
        return self.writer.draining

    def submit(self, pending: Pending) -> bool:
        request = pending.request
        if request is not None and request.api_key in QUORUM_API_KEYS:
            return self.raft.submit(pending)  # False: its queue is full
        self.writer.submit(pending)
        return True

    async def wait_for_room(self) -> None:
        await self.raft.wait_for_room()


class Daemon:
    def __init__(
        self,
        engine: ControllerEngine,
        options: DaemonOptions,
        quorum: QuorumConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """`engine`: loaded (`ControllerEngine.load`, a standby: the quorum makes it active once
        elected; a sole voter replays its whole log first, all of it being committed). `quorum`:
        the voters (None: this node alone, at the listener's address). `rng`: the quorum's
        randomness (election timeouts; None: unseeded)."""
        if engine.active:
            raise ValueError("the daemon's quorum activates the engine: give it a loaded one, not a started one")
        self.engine = engine
        self.options = options
        self.max_frame_bytes = options.max_frame_bytes
        self.idle_timeout_s = options.idle_timeout_s
        self.max_connections = options.max_connections or default_max_connections()
        #: memory for requests across connections (`used` is what they hold now)
        self.budget = MemoryBudget(options.max_queued_bytes, largest_frame=options.max_frame_bytes)
        self.draining = False
        self.port: int | None = None
        self._connections: set[Connection] = set()
        self._open = 0  # accepted connections whose handler has not ended (registered or about to be)
        self._accepting = trio.CancelScope()
        self.metrics = _make_metrics(self)
        self.metrics.watch_server(lambda: self._open, lambda: self.budget.used)
        self.capture = _make_capture(options)
        self.exchanges = ExchangeRecorder(self.metrics, self.capture)
        self.channel = _make_channel(self)
        if quorum is None:
            quorum = QuorumConfig(engine.config.node_id, (Voter(engine.config.node_id, options.host, options.port),))
        denials = Denials(self.metrics)
        self.quorum = Quorum(
            quorum, engine, rng=rng, tls=options.tls, metrics=self.metrics, channel=self.channel, denials=denials
        )
        self.writer = Writer(
            engine,
            self.channel,
            self.metrics,
            clock=monotonic,
            durability=self.quorum,
            denials=denials,
            heartbeat_interval_ms=options.broker_heartbeat_interval_ms,
        )
        self.metrics.watch_quorum(self.quorum.view, lambda: self.quorum.inbound.queued)
        self.requests = RequestRouter(self.writer, self.quorum.inbound)

    # ------------------------------------------------------------------ running
    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            if self.options.handle_signals:
                nursery.start_soon(self._watch_signals, nursery.cancel_scope)
            await nursery.start(self.writer.run)
            nursery.start_soon(self._session_timer)
            nursery.start_soon(self._sweep_idle)
            await nursery.start(self.channel.run)
            if self.capture is not None:
                nursery.start_soon(self._capture_flusher)
            if self.options.metrics_host is not None:
                from .http import serve_http

                serve = functools.partial(serve_http, quorum_provider=self.quorum.view)
                await nursery.start(
                    serve, self.options.metrics_host, self.options.metrics_port, self.metrics, lambda: self.engine
                )
            await nursery.start(self.quorum.run, self.writer)  # the full state goes out once this node is elected
            if self.quorum.config.single:
                await self.quorum.activated.wait()  # a sole voter leads at once: listen as the active controller
            listeners = await open_listeners(self.options.host, self.options.port, "--listen")
            self.port = bound_port(listeners[0])
            handlers: trio.Nursery = await nursery.start(_nursery_task)
            nursery.start_soon(self._accept, listeners, handlers)
            task_status.started(self.port)

    async def _accept(self, listeners: list[trio.abc.Listener[Any]], handlers: trio.Nursery) -> None:
        """Accept until shutdown; then close the listeners (the handlers run on in `handlers`)."""
        try:
            with self._accepting:
                async with trio.open_nursery() as acceptors:
                    for listener in listeners:
                        acceptors.start_soon(self._accept_from, listener, handlers)
        finally:
            for listener in listeners:
                await trio.aclose_forcefully(listener)

    async def _accept_from(self, listener: trio.abc.Listener[Any], handlers: trio.Nursery) -> None:
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                    raise
                self.metrics.connection_refused("descriptors")
                self.exchanges.flood_log.log(
                    logging.ERROR, "accept", "cannot accept connections (%s) with %d open; retrying", exc, self._open
                )
                await trio.sleep(_ACCEPT_RETRY_S)
                continue
            if self._open >= self.max_connections:
                self.metrics.connection_refused("max_connections")
                self.exchanges.flood_log.log(
                    logging.WARNING, "max", "refusing connections: %d open (--max-connections)", self._open
                )
                await trio.aclose_forcefully(stream)
                continue
            self._open += 1
            handlers.start_soon(self._connection, stream)

    async def _connection(self, stream: trio.abc.Stream) -> None:
        tls = self.options.tls
        connection = Connection(
            stream if tls is None else trio.SSLStream(stream, tls.context, server_side=True),
            writer=self.requests,
            exchanges=self.exchanges,
            budget=self.budget,
            max_frame_bytes=self.options.max_frame_bytes,
            handshake_timeout_s=tls.handshake_timeout_s if tls is not None else 0.0,
            mapping_rules=tls.mapping_rules if tls is not None else DEFAULT_MAPPING_RULES,
        )
        self._connections.add(connection)
        if self.draining:
            connection.stop()
        try:
            await connection.run()
        finally:
            self._connections.discard(connection)
            self._open -= 1

    async def _watch_signals(self, main_scope: trio.CancelScope) -> None:
        """The first SIGTERM/SIGINT drains; later ones while draining are logged and ignored (a
        commit's fsync must not be cut short; SIGKILL remains for an operator in a hurry)."""
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("received %s: draining", signal.Signals(signum).name)
                break
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_report_while_draining, signals)
                await self.shutdown()
                nursery.cancel_scope.cancel()
        # everything is closed and the process is about to exit 0: a late signal must not turn
        # that into death by signal (leaving the receiver restored the default handlers)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        main_scope.cancel()

    async def shutdown(self) -> None:
        """Stop accepting and reading; answer and commit what was read; let every commit and
        snapshot finish; hand the quorum's leadership over (a leader resigns with EndQuorumEpoch);
        stop the quorum (its log work in flight finished); flush the capture; close the log."""
        self.draining = True
        self.writer.begin_drain()  # from here on, connections hand nothing more to the writer
        self._accepting.cancel()
        for connection in list(self._connections):
            connection.stop()  # stops reading; a request in flight is still answered
        await self.writer.drain(self.options.drain_timeout_s)
        await self._answers_sent(self.options.drain_timeout_s)
        await self.quorum.hand_over()  # a leader resigns: the other voters elect at once
        await self.quorum.stop()  # a follower's append in flight finishes first: the log closes below
        if self.capture is not None:
            try:
                await in_thread(self.capture.close)
            except Exception as exc:  # best effort: a full capture disk must not keep the log open
                self.metrics.capture_failure()
                log.error(
                    "capture: the last part could not be written (%s); %d rows dropped", exc, self.capture.rows_dropped
                )
        self.engine.close()
        log.info("stopped")

    async def _answers_sent(self, timeout_s: float) -> None:
        """The writer has resolved what it will: let the connections send those answers (their
        own tasks do) before the daemon's exit cancels them (up to `timeout_s`)."""
        with trio.move_on_after(timeout_s):
            while any(c.in_flight is not None and c.in_flight.resolved for c in self._connections):
                await trio.sleep(0.005)

    async def _sweep_idle(self) -> None:
        """Close connections idle for longer than the idle timeout (checked a few times per timeout)."""
        interval = min(1.0, self.idle_timeout_s / 3)
        while True:
            await trio.sleep(interval)
            now = trio.current_time()
            for connection in list(self._connections):
                if connection.idle_for(now) > self.idle_timeout_s:
                    log.info("closing idle connection %s from %s", connection.id, connection.peer)
                    connection.stop()

    async def _session_timer(self) -> None:
        while True:
            deadline = self.engine.next_session_deadline_ns()
            now = monotonic_ns()
            if deadline is not None and deadline < now:
                self.writer.tick()
                await trio.sleep(0.05)
                continue
            wait = 0.25 if deadline is None else min(0.25, (deadline - now) / 1e9 + 0.001)
            await trio.sleep(max(wait, 0.001))

    async def _flush_capture(self) -> None:
        """One part: its rows converted here in slices between requests, then written from a thread."""
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
        await in_thread(self.capture.write, part, from_batches(batches))

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


async def _report_while_draining(signals: Any) -> None:
    async for signum in signals:
        log.warning("received %s while draining: already stopping", signal.Signals(signum).name)


async def _nursery_task(*, task_status: trio.TaskStatus[trio.Nursery] = trio.TASK_STATUS_IGNORED) -> None:
    """A nursery that lives until cancelled, for tasks started from elsewhere (connection handlers)."""
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


def _make_metrics(daemon: Daemon) -> ControllerMetrics:
    return ControllerMetrics(lambda: daemon.engine, lambda: daemon.engine)


def _make_capture(options: DaemonOptions) -> Any:
    if options.capture_dir is None:
        return None
    from .capture import CaptureWriter

    return CaptureWriter(options.capture_dir, rotate_seconds=options.capture_rotate_s)


def _make_channel(daemon: Daemon) -> ControlChannel:
    return ControlChannel(
        controller_id=daemon.engine.config.node_id,
        broker_address=daemon.engine.broker_address,
        metrics=daemon.metrics,
        capture=daemon.capture,
        tls=daemon.options.tls.client if daemon.options.tls is not None else None,
    )
