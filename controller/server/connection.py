"""One client connection of the daemon: read frames, hand requests to the writer, answer in order.

Calls go one way: the daemon creates a connection and cancels its `scope` (idle, shutdown); the
connection turns bytes into requests for the writer (`RequestSink.submit`) and reports what
became of each frame downwards (`ExchangeSink`: metrics, capture, log); the writer, which owns a
request's lifecycle, answers through `respond` or gives up through `abandon`. Nothing here calls
the daemon.

Rules (docs/protocol.md, Kafka's SocketServer):
- Frames are read through the sans-IO `FrameBuffer`; the size limit is enforced from the prefix.
- Memory for requests is bounded across connections by the daemon's `MemoryBudget` (Kafka's
  `queued.max.request.bytes`): once a frame's size prefix has arrived its whole size is
  reserved, or the connection reads nothing more until it can be. A frame keeps its reservation
  until answered or dropped; closing releases whatever the connection still holds. Frames that a
  single read brought in whole are counted as they are (`force`): the budget may be passed by at
  most one read (64 KiB) per connection.
- One request at a time per connection, as Kafka does (it mutes a channel until the response
  is sent): pipelined requests are answered strictly in order, the next one handed to the
  single writer only once the previous answer is sent. Concurrency comes from connections.
  While a frame waits behind the request in flight, nothing more is read (the socket's buffer
  pushes back on the peer), so a connection holds at most one read beyond its request.
- The writer answers: once a request's records are durable it sends the response frame straight
  to the socket (one non-blocking write; a peer that does not read gets the rest from a task of
  the connection's nursery). The reading task is woken once per request, by the bytes arriving.
- A frame over `LARGE_FRAME_BYTES` is decoded in a worker thread, in flight meanwhile, so that
  a 100 MiB frame never holds the event loop; it is dropped unanswered if the connection closed
  or the daemon began draining before the decode ended (it never reached the writer).
- ApiVersions at a version we do not speak is answered at once with a v0 body, error 35,
  listing only ApiVersions (KIP-511). An unknown api key, an unsupported version of any other
  API, an undecodable body, trailing bytes or an oversized size prefix close the connection
  without a response; it is logged with the peer and counted. Other connections never notice.
- The end of the peer's stream, and a shutdown, still answer the request in flight before the
  socket closes (after a shutdown, frames that wait behind it are dropped unanswered).
- A connection idle for `idle_timeout_s` is closed (by the daemon's sweeper, which cancels
  `scope`). Only whole frames are activity: bytes of an unfinished frame are not, so a frame
  trickled a byte at a time cannot hold a connection open. A connection with a request in hand,
  or waiting for memory (the daemon makes it wait, not the peer), is never idle.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import time
from collections import deque
from typing import Protocol

import trio

from protocol.api_keys import ApiKey
from protocol.errors import (
    DecodeError,
    FrameTooLargeError,
    UnsupportedVersionError,
)
from protocol.framing import FrameBuffer
from protocol.messages.api_versions import unsupported_version_answer
from protocol.registry import INBOUND_API_KEYS, Request, api, decode_request, encode_response
from protocol.spec import Data

from .budget import MemoryBudget

_IDS = itertools.count(1)
_READ_BYTES = 65536
#: Frames above this many bytes are decoded, and answered, off the event loop.
LARGE_FRAME_BYTES = 1 << 20


class Pending:
    """A request between arrival and its response (one per request: slotted, no event)."""

    __slots__ = (
        "connection",
        "decided_ns",
        "frame",
        "payload",
        "received_ns",
        "received_wall_ns",
        "request",
        "response",
    )

    def __init__(
        self, connection: Connection, payload: bytes, request: Request | None, received_ns: int, wall_ns: int
    ) -> None:
        self.connection = connection
        self.payload = payload
        self.request = request
        self.received_ns = received_ns  # monotonic, for latency
        self.received_wall_ns = wall_ns  # wall clock, for the capture
        self.decided_ns = 0
        self.response: Data | None = None
        self.frame: bytes | None = None  # the encoded response frame, once ready

    @property
    def connection_id(self) -> int:
        return self.connection.id

    @property
    def peer(self) -> str:
        return self.connection.peer


class RequestSink(Protocol):
    """Where decoded requests go (the group-commit writer, which answers them through `respond`)."""

    @property
    def draining(self) -> bool: ...

    def submit(self, pending: Pending) -> None: ...


class ExchangeSink(Protocol):
    """Where the connection reports what became of each frame (`controller.server.exchanges`)."""

    def answered(self, pending: Pending) -> None: ...
    def unanswered(self, pending: Pending) -> None: ...
    def refused(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None: ...


def api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: the v0 answer to an ApiVersions version we do not speak."""
    return encode_response(unsupported_version_answer(api(ApiKey.API_VERSIONS).versions), 0, correlation_id)


def _peer_name(stream: trio.SocketStream) -> str:
    """HOST:PORT of an IP peer; a Unix socket's path (or "local"); "unknown" once it is gone."""
    try:
        address = stream.socket.getpeername()
    except OSError:
        return "unknown"
    if isinstance(address, tuple):
        return f"{address[0]}:{address[1]}"
    return str(address) or "local"


class Connection:
    def __init__(
        self,
        stream: trio.SocketStream,
        *,
        writer: RequestSink,
        exchanges: ExchangeSink,
        budget: MemoryBudget,
        max_frame_bytes: int,
        allowed: frozenset[int] = INBOUND_API_KEYS,
    ) -> None:
        self.writer = writer
        #: the api keys this daemon serves (a quorum member's include the Raft RPCs)
        self.allowed = allowed
        self.exchanges = exchanges
        self.stream = stream
        self.id = next(_IDS)
        self.peer = _peer_name(stream)
        self._fd = stream.socket.fileno()
        self.buffer = FrameBuffer(max_frame_bytes)
        self.budget = budget
        #: cancelled by the daemon (idle, or shutting down); the request in flight is still answered
        self.scope = trio.CancelScope()
        self.last_activity = trio.current_time()  # the last whole frame received (or memory granted)
        self.in_flight: Pending | None = None  # handed to the writer (or being sent), not yet answered
        self.closed = False  # no more answers: the socket is closing or broken
        #: frames read, waiting behind the request in flight (an oversized prefix waits its turn too)
        self._held: deque[bytes | FrameTooLargeError] = deque()
        self._resume: trio.Event | None = None  # the reader waits on it while frames are held
        self._settled: trio.Event | None = None  # set once nothing is in flight or held
        self._nursery: trio.Nursery | None = None
        self._pumping = False
        self._reserved = 0  # bytes of the budget this connection holds (frames held, in flight, arriving)
        self._frame_reserved = 0  # of which for the frame being received, reserved at its prefix
        self._waiting_for_memory = False

    @property
    def reserved(self) -> int:
        """Bytes of the budget this connection holds now."""
        return self._reserved

    @property
    def busy(self) -> bool:
        """A request is in hand or waiting, or the daemon makes us wait for memory: not idle."""
        return self.in_flight is not None or bool(self._held) or self._waiting_for_memory

    def idle_for(self, now: float) -> float:
        """Seconds since the last whole frame arrived, or 0 while busy."""
        return 0.0 if self.busy else now - self.last_activity

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:  # the reader here; a slow answer's sender, a decode
                self._nursery = nursery
                try:
                    with self.scope:
                        await self._read()
                    await self._settle()
                finally:
                    self._close()  # from here on an answer is dropped, never handed to a closing nursery
        finally:
            self._release(self._reserved)  # every task of the connection is done: nothing holds it now
            await trio.aclose_forcefully(self.stream)

    # ------------------------------------------------------------------ reading (the connection's task)
    async def _read(self) -> None:
        fd = self._fd
        buffer = self.buffer
        while not self.closed:
            if self._held:  # one frame already waits behind the request in flight: read no further
                self._resume = trio.Event()
                await self._resume.wait()
                continue
            if buffer.announced_size > self._frame_reserved:  # memory for the frame arriving, first
                await self._reserve_frame(buffer.announced_size)
                continue
            await trio.lowlevel.wait_readable(fd)
            try:
                data = os.read(fd, _READ_BYTES)
            except BlockingIOError:
                continue
            except OSError:  # reset by the peer
                self._close()
                return
            if not data:
                return
            frames, refused = buffer.receive_frames(data)
            if frames:
                self._hold(frames)
            if refused is not None:  # refused in its turn: the frames before it are answered
                self._held.append(refused)
            self._pump()

    def _hold(self, frames: list[bytes]) -> None:
        """Whole frames received: they are activity, and they count against the budget (the
        first may be the frame reserved at its prefix; the others came whole in this read)."""
        self.last_activity = trio.current_time()
        size = len(frames[0]) if len(frames) == 1 else sum(map(len, frames))
        unreserved = size - self._frame_reserved
        self._frame_reserved = 0
        self._reserved += unreserved
        self.budget.force(unreserved)
        self._held.extend(frames)

    async def _reserve_frame(self, size: int) -> None:
        """Reserve the frame whose prefix has arrived; wait in line, reading nothing, if it does not fit."""
        budget = self.budget
        if not budget.try_reserve(size):
            self._waiting_for_memory = True
            try:
                await budget.wait_reserve(size)
            finally:
                self._waiting_for_memory = False
            self.last_activity = trio.current_time()  # the peer's idle time starts once we read again
        self._frame_reserved = size
        self._reserved += size

    def _release(self, size: int) -> None:
        self._reserved -= size
        self.budget.release(size)

    async def _settle(self) -> None:
        """The peer is done or the daemon is draining: answer what is in flight before closing
        (`_pump` drops what waits behind it when draining)."""
        if not self.closed and self.busy:
            self._settled = trio.Event()
            await self._settled.wait()

    def _pump(self) -> None:
        """Hand the next held frame to the writer once nothing is in flight (any task calls this).

        Not reentrant: a frame answered at once (the KIP-511 fallback) calls back in here through
        `respond`, and the loop already running takes the next frame instead of nesting deeper."""
        if self._pumping:
            return
        held = self._held
        self._pumping = True
        try:
            while self.in_flight is None and held and not self.closed:
                if self.writer.draining:
                    self._release(sum(len(frame) for frame in held if isinstance(frame, bytes)))
                    held.clear()
                    break
                self._start(held.popleft())
        finally:
            self._pumping = False
        if not held and self._resume is not None:
            self._resume.set()
            self._resume = None
        if self._settled is not None and (self.closed or not self.busy):
            self._settled.set()

    def _start(self, payload: bytes | FrameTooLargeError) -> None:
        """Decode one frame and hand it to the writer (or answer or refuse it at once); a large
        frame is decoded in a worker thread, in flight meanwhile."""
        if isinstance(payload, FrameTooLargeError):
            self._refuse(payload, None)
            return
        pending = Pending(self, payload, None, time.monotonic_ns(), time.time_ns())
        self.in_flight = pending
        if len(payload) > LARGE_FRAME_BYTES:
            assert self._nursery is not None
            self._nursery.start_soon(self._decode_in_thread, pending)
            return
        try:
            pending.request = decode_request(payload, allowed=self.allowed)
        except DecodeError as exc:
            self._not_decoded(pending, exc)
            return
        self.writer.submit(pending)

    async def _decode_in_thread(self, pending: Pending) -> None:
        error: DecodeError | None = None
        try:
            decode = functools.partial(decode_request, pending.payload, allowed=self.allowed)
            pending.request = await trio.to_thread.run_sync(decode)
        except DecodeError as exc:
            error = exc
        if self.closed or self.writer.draining:  # never handed to the writer: nobody will answer it
            self.in_flight = None
            self._release(len(pending.payload))
            self._close()
        elif error is not None:
            self._not_decoded(pending, error)
        else:
            self.writer.submit(pending)
        self._pump()  # wakes `_settle` if the connection is done

    def _not_decoded(self, pending: Pending, exc: DecodeError) -> None:
        """KIP-511: ApiVersions at a version we do not speak is answered at once; any other
        frame that does not decode is refused."""
        if (
            isinstance(exc, UnsupportedVersionError)
            and exc.api_key == ApiKey.API_VERSIONS
            and exc.correlation_id is not None
        ):
            pending.frame = api_versions_fallback(exc.correlation_id)
            self.respond(pending)
            return
        self.in_flight = None
        self._release(len(pending.payload))
        self._refuse(exc, pending.payload)

    def _refuse(self, exc: DecodeError, payload: bytes | None) -> None:
        self.exchanges.refused(exc.reason, self.peer, payload, str(exc))
        self._close()

    # ------------------------------------------------------------------ answering (the writer calls these)
    def respond(self, pending: Pending) -> None:
        """Send `pending.frame` (the writer's task, once durable); then start the next held frame."""
        frame = pending.frame
        assert frame is not None and pending is self.in_flight
        if self.closed:
            self.abandon(pending)
            return
        try:
            sent = os.write(self._fd, frame)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.abandon(pending)
            return
        if sent < len(frame):
            assert self._nursery is not None
            self._nursery.start_soon(self._send_rest, pending, sent)
            return
        self._answered(pending)

    def abandon(self, pending: Pending) -> None:
        """No answer for `pending` (it could not be decided, or the peer is gone): close, as Kafka does."""
        self.in_flight = None
        self._release(len(pending.payload))
        self.exchanges.unanswered(pending)
        self._close()
        self._pump()

    async def _send_rest(self, pending: Pending, sent: int) -> None:
        assert pending.frame is not None
        rest = memoryview(pending.frame)[sent:]
        try:
            while rest:
                await trio.lowlevel.wait_writable(self._fd)
                with contextlib.suppress(BlockingIOError):
                    rest = rest[os.write(self._fd, rest) :]
        except (OSError, trio.ClosedResourceError):
            self.abandon(pending)
            return
        self._answered(pending)

    def _answered(self, pending: Pending) -> None:
        self.in_flight = None
        self._release(len(pending.payload))
        self.exchanges.answered(pending)
        self._pump()

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.scope.cancel()
            if self._resume is not None:
                self._resume.set()
