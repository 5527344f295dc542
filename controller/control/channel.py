"""The outbound control channel: delivers the core's control orders (LeaderAndIsr, StopReplica) to brokers.

Rules (semantics.md "Propagation to brokers" and "StopReplica and LeaderAndIsr"; protocol.md):
- One queue and, while it has orders, one task and one TCP connection per broker. Orders leave
  in submission (log) order; several may be in flight at once on the connection (pipelined),
  and the broker answers them in order. An order leaves its queue once every request it became
  has been answered.
- The connection goes to the broker's registered listener (`broker_address`) in that listener's
  security protocol (`controller.control.tls`): PLAINTEXT over TCP; SSL over TLS when the channel
  has a client context (`tls`), the controller presenting its certificate and checking the broker's
  name against the host it registered; a listener of any other protocol (or SSL without `tls`) is
  not attempted: logged once per broker incarnation and counted (`unspeakable_listeners`,
  `connection_failures` and the metric's connection failure, once), its orders waiting (merged,
  bounded) for a registration the channel can reach, as those of an unreachable broker do. A
  failed handshake (a certificate refused either way) is a connection failure like any other.
- Each connection starts with ApiVersions v3 (client "fencer" 0.1). On UNSUPPORTED_VERSION (35)
  the request is repeated at the max version of the key-18 entry (KIP-511); any other error
  closes the connection. Each order is sent at the highest version both sides support; an order
  the broker cannot take at all is logged, counted as UNSUPPORTED_VERSION and dropped.
- Errors in responses, top-level and per partition, are logged (logger `fencer.channel`) and
  counted (`controller.control.outcomes`). Stale rejections (STALE_BROKER_EPOCH,
  STALE_CONTROLLER_EPOCH, FENCED_LEADER_EPOCH) are answers like any other: the order is never resent.
- A connection error, a timeout or a malformed response closes the connection and counts a
  failure; the task reconnects with exponential backoff and jitter, and re-sends the orders not
  yet answered, while `broker_address` still gives an address. When it gives None (broker
  unregistered or fenced) the queue is dropped and the task ends. Orders addressed to an older
  broker epoch than the broker's current one are dropped before sending: the new incarnation
  gets a full LeaderAndIsr from the core once it is unfenced.
- An idle connection is kept for `idle_timeout_s` (new orders reuse it), and closed earlier if the
  broker closes it.
- Nothing a broker sends can crash the channel.
- Nothing grows with the number of requests sent: `outcomes` keeps the last answers only; the
  totals are counters and the metrics.
- Metrics (optional): the queue depth at every change, one `outbound_response` per answer with its
  outcome (top-level error, else the first partition error), one `outbound_connection_failure` per
  failed connection. Capture (optional): every exchange, as `protocol.capture.Exchange`.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import random
import ssl
from collections.abc import Sequence

import trio

from protocol.api_keys import ApiKey
from protocol.capture import OUTBOUND, Exchange
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.registry import decode_response
from protocol.security_protocol import SecurityProtocol, protocol_name
from protocol.spec import Data
from protocol.versions import Versions

from ..backoff import exponential_backoff
from ..runtime import in_thread, wall_ns
from .links import (
    API_VERSIONS_VERSION,
    CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION,
    CLOSE_TIMEOUT_S,
    CONNECTION_ERRORS,
    JITTER_SEED,
    LARGE_PAYLOAD_BYTES,
    OUTBOUND_CONNECTION_IDS,
    BrokerAddress,
    BrokerConnection,
    CaptureSink,
    Link,
    OutboundRequest,
    PeerError,
    mergeable,
)
from .orders import BrokerTarget, ControlOrder
from .outcomes import ChannelMetrics, Outcomes, log
from .planning import OrderPlanner
from .tls import Transport, failure_text, open_stream, transport_for


class ControlChannel:
    """Per-broker outbound queues of control orders, delivered by `run`'s tasks."""

    def __init__(
        self,
        *,
        controller_id: int,
        broker_address: BrokerAddress,
        metrics: ChannelMetrics | None = None,
        capture: CaptureSink | None = None,
        backoff_initial_s: float = 0.05,
        backoff_max_s: float = 2.0,
        request_timeout_s: float = 10.0,
        idle_timeout_s: float = 30.0,
        max_in_flight: int = 32,
        max_in_flight_bytes: int = 64 * 1024,
        rng: random.Random | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.controller_id = controller_id
        #: the client context for brokers' SSL listeners (None: SSL listeners are not attempted)
        self._tls = tls
        self._broker_address = broker_address
        self._metrics = metrics
        self._capture = capture
        self._backoff_initial_s = backoff_initial_s
        self._backoff_max_s = backoff_max_s
        self._request_timeout_s = request_timeout_s
        self._idle_timeout_s = idle_timeout_s
        self._max_in_flight = max(1, max_in_flight)
        self._rng = rng if rng is not None else random.Random(JITTER_SEED + controller_id)
        self._links: dict[int, Link] = {}
        self._nursery: trio.Nursery | None = None
        # a range of their own, so that captured outbound connections never share an id with inbound ones
        self._connection_ids = itertools.count(OUTBOUND_CONNECTION_IDS + 1)
        #: the answers: the recent ones (`recent_answers`), error counts, stale rejections
        self.outcomes = Outcomes(metrics)
        self._planner = OrderPlanner(broker_address, self.outcomes, self._max_in_flight, max_in_flight_bytes)
        self.connection_failures = 0
        self.dropped_orders = 0
        #: orders submitted while held (`hold`), in submission order; None when not held
        self._held: list[ControlOrder] | None = None
        #: broker incarnations whose registered listener the channel cannot speak to
        self.unspeakable_listeners = 0

    # ------------------------------------------------------------------ public
    def submit(self, orders: Sequence[ControlOrder]) -> None:
        """Queue orders (non-blocking; call from the event loop). Each broker's orders keep their
        order. While held (`hold`), they wait behind the orders that `release` puts first."""
        if self._held is not None:
            self._held.extend(orders)
            return
        touched: dict[int, Link] = {}
        for order in orders:
            link = self._links.setdefault(order.broker_id, Link(order.broker_id))
            queue = link.queue
            # A broker that cannot keep up (or cannot be reached) must not make its queue grow
            # without bound: a LeaderAndIsr behind the in-flight window merges into a LeaderAndIsr
            # queued just before it (the later state of each partition wins).
            if len(queue) > self._max_in_flight and mergeable(queue[-1], order):
                link.merge_into_tail(order)
            else:
                queue.append(order)
            touched[link.broker_id] = link
        for link in touched.values():
            self._queue_changed(link)
            if link.wakeup is not None:
                link.wakeup.set()
            if not link.running and self._nursery is not None:
                self._spawn(link)

    def hold(self) -> None:
        """Keep the orders submitted from now on until `release`: a new controller's full state
        goes first, and is built while the controller goes on deciding."""
        if self._held is None:
            self._held = []

    def release(self, first: Sequence[ControlOrder]) -> None:
        """Queue `first`, then the orders held since `hold`, in their order; stop holding."""
        held, self._held = self._held or [], None
        self.submit([*first, *held])

    def clear(self) -> int:
        """Drop every queued order (this controller's epoch is over: a deposed controller pushes
        nothing more; requests already sent are answered, or refused by brokers that have seen a
        newer controller epoch), held ones too (`hold`); the number dropped."""
        dropped = len(self._held or ())
        self._held = None
        for link in self._links.values():
            dropped += len(link.queue)
            link.queue.clear()
            self._queue_changed(link)
            if link.wakeup is not None:
                link.wakeup.set()
        self.dropped_orders += dropped
        return dropped

    def queue_depth(self, broker_id: int) -> int:
        link = self._links.get(broker_id)
        return 0 if link is None else len(link.queue)

    def is_running(self, broker_id: int) -> bool:
        """Whether a task is delivering to (or idling on a connection to) this broker."""
        link = self._links.get(broker_id)
        return link is not None and link.running

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Deliver orders until cancelled (one task per broker with pending orders)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for link in self._links.values():
                    if link.queue and not link.running:
                        self._spawn(link)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._nursery = None

    # ------------------------------------------------------------------ per-broker task
    def _spawn(self, link: Link) -> None:
        assert self._nursery is not None
        link.running = True
        self._nursery.start_soon(self._broker_task, link, name=f"control-channel-{link.broker_id}")

    async def _broker_task(self, link: Link) -> None:
        try:
            while True:
                address = self._target(link)
                if address is None or not link.queue:
                    return
                transport = transport_for(address.security_protocol, self._tls)
                if transport is None:
                    self._unspeakable(link, address)
                    link.failures += 1
                    await trio.sleep(self._backoff(link.failures))
                    continue
                try:
                    await self._session(link, address, transport)
                except CONNECTION_ERRORS as exc:
                    link.failures += 1
                    delay = self._backoff(link.failures)
                    self.connection_failures += 1
                    if self._metrics is not None:
                        self._metrics.outbound_connection_failure(link.broker_id)
                    # the first failure of a streak is a warning; the retries that follow, debug noise
                    log.log(
                        logging.WARNING if link.failures == 1 else logging.DEBUG,
                        "broker %d at %s:%d: connection failed (%s); retrying in %.3fs",
                        link.broker_id, address.host, address.port, failure_text(exc), delay,
                    )  # fmt: skip
                    await trio.sleep(delay)
        finally:
            link.running = False
            link.wakeup = None

    def _unspeakable(self, link: Link, address: BrokerTarget) -> None:
        """A listener the channel cannot speak to: logged and counted once per broker incarnation."""
        if link.unspeakable_epoch == address.broker_epoch:
            return
        link.unspeakable_epoch = address.broker_epoch
        self.unspeakable_listeners += 1
        self.connection_failures += 1
        if self._metrics is not None:
            self._metrics.outbound_connection_failure(link.broker_id)
        protocol = protocol_name(address.security_protocol)
        why = "the channel has no TLS context" if address.security_protocol == SecurityProtocol.SSL else "unsupported"
        log.warning(
            "broker %d (epoch %d) registered its listener %s:%d as %s (%s): not connecting; its orders wait",
            link.broker_id, address.broker_epoch, address.host, address.port, protocol, why,
        )  # fmt: skip

    def _target(self, link: Link) -> BrokerTarget | None:
        """The broker's address; drops its queue if it has none, and orders for older incarnations."""
        address = self._broker_address(link.broker_id)
        if address is None:
            if link.queue:
                log.info("broker %d is unregistered or fenced: dropping %d orders", link.broker_id, len(link.queue))
                self.dropped_orders += len(link.queue)
                link.queue.clear()
                self._queue_changed(link)
            return None
        epoch = address.broker_epoch
        kept = [order for order in link.queue if order.broker_epoch >= epoch]
        if len(kept) != len(link.queue):
            dropped = len(link.queue) - len(kept)
            log.info("broker %d: dropping %d orders for broker epochs older than %d", link.broker_id, dropped, epoch)
            self.dropped_orders += dropped
            link.queue.clear()
            link.queue.extend(kept)
            self._queue_changed(link)
        return address

    def _backoff(self, failures: int) -> float:
        delay = exponential_backoff(self._backoff_initial_s, self._backoff_max_s, failures)
        return delay * (0.5 + 0.5 * self._rng.random())

    async def _session(self, link: Link, address: BrokerTarget, transport: Transport) -> None:
        """One connection: negotiate, then send until idle, gone or moved. Raises on connection errors."""
        host, port = address.host, address.port
        with trio.fail_after(self._request_timeout_s):
            stream = await open_stream(address.host, address.port, transport, self._tls)
        try:
            conn = BrokerConnection(stream, f"{host}:{port}", next(self._connection_ids))
            versions = await self._negotiate(link, conn)
            while True:
                if not link.queue and not await self._idle(link, conn):
                    return
                current = self._target(link)
                if current is None or (current.host, current.port, current.security_protocol) != (
                    host,
                    port,
                    address.security_protocol,
                ):
                    return
                if link.queue:
                    await self._send_batch(link, conn, versions)
        finally:
            # a TLS goodbye (close_notify) must not hang on a broker that reads nothing: cut short, it closes anyway
            with trio.move_on_after(CLOSE_TIMEOUT_S):
                await stream.aclose()

    async def _idle(self, link: Link, conn: BrokerConnection) -> bool:
        """Wait for orders; False when the idle timeout passes or the broker closes (or talks) first."""
        event = link.wakeup = trio.Event()
        woken = False
        with trio.move_on_after(self._idle_timeout_s):
            async with trio.open_nursery() as nursery:

                async def orders() -> None:
                    nonlocal woken
                    await event.wait()
                    woken = True
                    nursery.cancel_scope.cancel()

                async def peer() -> None:
                    # whatever happens (bytes, EOF, a reset), the idle connection is done
                    with contextlib.suppress(Exception):
                        await conn.stream.receive_some(1)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(orders)
                nursery.start_soon(peer)
        link.wakeup = None
        return woken

    # ------------------------------------------------------------------ exchanges
    async def _negotiate(self, link: Link, conn: BrokerConnection) -> dict[int, Versions]:
        """ApiVersions with the KIP-511 fallback: the broker's supported versions per api key."""
        version = API_VERSIONS_VERSION
        while True:
            body = ApiVersionsRequest(
                client_software_name=CLIENT_SOFTWARE_NAME if version >= 3 else "",
                client_software_version=CLIENT_SOFTWARE_VERSION if version >= 3 else "",
            )
            request = conn.request(body, version)
            await self._send(conn, [request])
            response = await self._receive(conn, request)
            if not isinstance(response, ApiVersionsResponse):  # pragma: no cover - decode_response's type
                raise PeerError("not an ApiVersions response")
            self.outcomes.negotiated(link.broker_id, ApiKey.API_VERSIONS, version, response.error_code)
            if response.error_code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
                fallback = next((k.max_version for k in response.api_keys if k.api_key == ApiKey.API_VERSIONS), 0)
                if not 0 <= fallback < version:
                    raise PeerError(f"ApiVersions fallback to v{fallback} after v{version}")
                log.info(
                    "broker %d: ApiVersions v%d unsupported, falling back to v%d", link.broker_id, version, fallback
                )
                version = fallback
                continue
            if response.error_code != ErrorCode.NONE:
                raise PeerError(f"ApiVersions v{version} failed with error {response.error_code}")
            return {k.api_key: Versions(k.min_version, k.max_version) for k in response.api_keys}

    async def _send(self, conn: BrokerConnection, requests: list[OutboundRequest]) -> None:
        now = wall_ns()
        for request in requests:
            request.sent_ns = now
        await conn.stream.send_all(b"".join(request.frame for request in requests))

    async def _receive(self, conn: BrokerConnection, request: OutboundRequest) -> Data:
        """The response to `request` (the next one on the connection), recorded and captured."""
        with trio.fail_after(self._request_timeout_s):
            payload = await conn.receive_frame()
        decode = functools.partial(decode_response, payload, request.api_key, request.version)
        # a broker's answer to a large order is decoded off the event loop
        header, response = await in_thread(decode) if len(payload) > LARGE_PAYLOAD_BYTES else decode()
        if header.correlation_id != request.correlation_id:
            raise PeerError(f"correlation id {header.correlation_id}, expected {request.correlation_id}")
        self._record_capture(conn, request, payload)
        return response

    async def _send_batch(self, link: Link, conn: BrokerConnection, versions: dict[int, Versions]) -> None:
        """Send orders from the front of the queue (within the in-flight limits), then read their answers in order."""
        plans = await self._planner.plan(link, conn, versions)
        await self._send(conn, [request for _, requests in plans for request in requests])
        for order, requests in plans:
            for request in requests:
                response = await self._receive(conn, request)
                self.outcomes.response(link.broker_id, order, request.api_key, request.version, response)
            if link.queue and link.queue[0] is order:
                link.queue.popleft()
            link.failures = 0
            self._queue_changed(link)

    # ------------------------------------------------------------------ queues and capture
    def _queue_changed(self, link: Link) -> None:
        if self._metrics is not None:
            self._metrics.outbound_queue(link.broker_id, len(link.queue))

    def _record_capture(self, conn: BrokerConnection, request: OutboundRequest, response_payload: bytes) -> None:
        if self._capture is None:
            return
        try:
            exchange = Exchange(
                request_time_ns=request.sent_ns,
                response_time_ns=wall_ns(),
                direction=OUTBOUND,
                connection_id=conn.connection_id,
                peer=conn.peer,
                api_key=request.api_key,
                api_version=request.version,
                correlation_id=request.correlation_id,
                request=request.frame[4:],
                response=response_payload,
            )
            self._capture.add(exchange)
        except Exception:  # a capture problem must not stop delivery
            log.exception("capturing an outbound exchange failed")
