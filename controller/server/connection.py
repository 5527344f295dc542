"""One client connection of the daemon: its task reads a frame, hands the request on, awaits its
outcome and writes the answer itself, one request at a time (hypercorn's trio worker).

Calls go one way: the daemon creates a connection and stops it (`stop`: idle, shutdown); the
connection owns its stream, hands each decoded request to the writer (`RequestSink.submit`; the
daemon's router gives the quorum's RPCs to the quorum) as a `Pending`, and reports what became of
each frame downwards (`ExchangeSink`: metrics, capture, log). Whoever answers resolves the
request's one-shot outcome (`Pending.answer` with the response frame, or `close_unanswered`) and
never touches the connection; the connection's task, waiting on that outcome, sends the frame.

Rules (docs/protocol.md, Kafka's SocketServer):
- Frames are read through the sans-IO `FrameBuffer`; the size limit is enforced from the prefix.
- Memory for requests is bounded across connections by the daemon's `MemoryBudget` (Kafka's
  `queued.max.request.bytes`): once a frame's size prefix has arrived, and the frame is not
  whole yet, its whole size is reserved (`async with budget.reserve(size)`), or the connection
  reads nothing more until it can be. A frame holds its reservation until it is answered or
  dropped. A frame that is already whole in the buffer when its turn comes (a read brought it in
  with the frame before it) is counted as it is (`force`): the budget may be passed by at most
  one read (64 KiB) per connection, and bytes buffered behind the request in hand (at most one
  read) are counted when their turn comes.
- One request at a time per connection, as Kafka does (it mutes a channel until the response
  is sent): pipelined requests are answered strictly in order, the next one decoded and handed
  on only once the previous answer is sent. Concurrency comes from connections. While a request
  is in hand nothing more is read (the socket's buffer pushes back on the peer), so a
  connection holds at most one read beyond its request.
- The connection's task owns its `trio.abc.Stream` and is the only one to read or write it,
  with one exception, the hot path: a plain `trio.SocketStream` is read and written through its
  descriptor (what SocketStream does, without its two scheduler round trips per call), and a
  request handed on carries the connection's non-blocking write (`Pending.writer_hook`), which
  `Pending.answer` calls at once, in the answering task, while the connection's task is parked
  on the outcome: the peer has its answer without waiting for the task to be scheduled, and the
  task, when it runs, finds the next request often already there (it reads before it waits). So
  the task is woken about once per request, as before the rework (before: the writer wrote
  through the connection's `respond`). The hook writes what the socket takes and never blocks;
  the task sends the rest, or closes if the peer is gone; a connection cancelled while parked
  clears the hook first, so nothing is ever written to a descriptor it closed. Any other stream
  (TLS) is read and written by the task alone (`receive_some` / `send_all`).
- A frame over `LARGE_FRAME_BYTES` is decoded in a worker thread, from the connection's task
  (which reads nothing meanwhile), so that a 100 MiB frame never holds the event loop; it is
  dropped unanswered if the connection was stopped or the daemon began draining before the decode
  ended (it never reached the writer).
- ApiVersions at a version we do not speak is answered at once with a v0 body, error 35,
  listing only ApiVersions (KIP-511). An unknown api key, an unsupported version of any other
  API, an undecodable body, trailing bytes or an oversized size prefix close the connection
  without a response, in its turn (the requests before it are answered); it is logged with the
  peer and counted. Other connections never notice.
- An outcome of "close unanswered" (a commit that will never be committed, a decision or an
  encoding that failed) closes the connection without an answer: never an answer with NONE.
- The end of the peer's stream, and a stop, still answer the request in hand before the
  stream closes (after a stop, frames that wait behind it are dropped unanswered, and so is a
  frame not yet handed on when the daemon drains).
- A connection idle for `idle_timeout_s` is stopped by the daemon's sweeper. Only whole frames
  are activity: bytes of an unfinished frame are not, so a frame trickled a byte at a time
  cannot hold a connection open. A connection with a request in hand, or waiting for memory (the
  daemon makes it wait, not the peer), is never idle.
- Over TLS (`trio.SSLStream`) the handshake comes first, in the connection's own task, under
  `handshake_timeout_s`: a stalled or failed handshake, or a plaintext client on a TLS port,
  holds up nothing else; it closes the connection unanswered, logged and counted
  (`ExchangeSink.tls_failed`, by `tls.failure_reason`). Then the peer's principal is taken from
  its certificate (`tls.peer_principal`; "User:ANONYMOUS" without TLS or without a certificate),
  and every request carries it, with the peer's host, to the writer (`Pending.principal`, `.host`).
- `stop` cancels only reading and waiting for memory (`scope`); a request in hand is answered
  first. The daemon's own cancellation (its exit) ends everything, a request in hand included
  (reported unanswered).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections import deque
from collections.abc import Callable

import trio

from protocol.api_keys import ApiKey
from protocol.errors import (
    DecodeError,
    FrameTooLargeError,
    UnsupportedVersionError,
)
from protocol.framing import FrameBuffer
from protocol.messages.api_versions import unsupported_version_answer
from protocol.registry import api, encode_response

from ..auth.principal_mapping import PrincipalMappingRules
from ..ops.served import INBOUND_API_KEYS
from ..runtime import in_thread, monotonic_ns, wall_ns
from .budget import MemoryBudget, Reservation
from .pending import LARGE_FRAME_BYTES, ExchangeSink, Pending, RequestSink
from .request_checks import decode_served
from .tls import ANONYMOUS, DEFAULT_HANDSHAKE_TIMEOUT_MS, DEFAULT_MAPPING_RULES, failure_reason, peer_principal

_IDS = itertools.count(1)
_READ_BYTES = 65536
#: the most of an answer handed to a TLS stream at once (one TLS record's payload)
_TLS_SEND_BYTES = 16384


def api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: the v0 answer to an ApiVersions version we do not speak."""
    return encode_response(unsupported_version_answer(api(ApiKey.API_VERSIONS).versions), 0, correlation_id)


def socket_of(stream: trio.abc.Stream) -> trio.socket.SocketType | None:
    """The socket under a SocketStream, or under a stream wrapping one (an SSLStream's transport)."""
    while not isinstance(stream, trio.SocketStream):
        inner = getattr(stream, "transport_stream", None)
        if not isinstance(inner, trio.abc.Stream):
            return None
        stream = inner
    return stream.socket


def peer_address(stream: trio.abc.Stream) -> tuple[str, str]:
    """(HOST:PORT, HOST) of an IP peer; a Unix socket's path (or "local") twice; "unknown" once
    it is gone."""
    sock = socket_of(stream)
    try:
        address = sock.getpeername() if sock is not None else None
    except OSError:
        return "unknown", "unknown"
    if isinstance(address, tuple):
        return f"{address[0]}:{address[1]}", str(address[0])
    name = str(address) if address else "local" if sock is not None else "unknown"
    return name, name


def _detail(error: BaseException | None) -> str:
    """What OpenSSL (or the socket) said, for the log."""
    if error is None:
        return "timed out"
    cause = error.__cause__ or error.__context__
    return str(cause or error) or type(error).__name__


def _write(fd: int, data: bytes) -> int:
    """One non-blocking write: the bytes sent (0 when the socket's buffer is full, -1 when the peer
    is gone)."""
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError:
        return -1


#: what a failed send raises: the peer is gone (the request is then unanswered)
_SEND_ERRORS = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)


class Connection:
    def __init__(
        self,
        stream: trio.abc.Stream,
        *,
        writer: RequestSink,
        exchanges: ExchangeSink,
        budget: MemoryBudget,
        max_frame_bytes: int,
        allowed: frozenset[int] = INBOUND_API_KEYS,
        handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_MS / 1000,
        mapping_rules: PrincipalMappingRules = DEFAULT_MAPPING_RULES,
    ) -> None:
        self.writer = writer
        #: the api keys this daemon serves (a quorum member's include the Raft RPCs)
        self.allowed = allowed
        self.exchanges = exchanges
        self.stream = stream
        #: a plain SocketStream's descriptor, read and written directly (-1: any other stream, TLS)
        self._fd = stream.socket.fileno() if type(stream) is trio.SocketStream else -1
        #: `Pending.writer_hook`: the descriptor's non-blocking write (None: the task sends, TLS)
        self._hook: Callable[[bytes], int] | None = functools.partial(_write, self._fd) if self._fd >= 0 else None
        self.id = next(_IDS)
        self.peer, self.host = peer_address(stream)
        #: the peer's principal: anonymous until a TLS handshake names it
        self.principal = ANONYMOUS
        self.handshake_timeout_s = handshake_timeout_s
        self.mapping_rules = mapping_rules  # --ssl-principal-mapping-rules
        self.buffer = FrameBuffer(max_frame_bytes)
        self.budget = budget
        #: reading and waiting for memory (cancelled by `stop`); a request in hand is outside it
        self.scope = trio.CancelScope()
        self.last_activity = trio.current_time()  # the last whole frame received (or memory granted)
        self.in_flight: Pending | None = None  # in hand: being decoded, decided or sent
        self.stopped = False
        self._reservation: Reservation | None = None  # for the frame arriving or in hand
        #: whole frames read behind the one in hand (at most one read's worth), and a refusal after them
        self._ready: deque[bytes] = deque()
        self._refusal: FrameTooLargeError | None = None

    @property
    def reserved(self) -> int:
        """Bytes of the budget this connection holds now (the frame arriving or in hand)."""
        reservation = self._reservation
        return reservation.size if reservation is not None and reservation.granted else 0

    @property
    def busy(self) -> bool:
        """A request is in hand, or the daemon makes us wait for memory: not idle."""
        reservation = self._reservation
        return self.in_flight is not None or (reservation is not None and not reservation.granted)

    def idle_for(self, now: float) -> float:
        """Seconds since the last whole frame arrived, or 0 while busy."""
        return 0.0 if self.busy else now - self.last_activity

    def stop(self) -> None:
        """Read no more (idle, or the daemon is shutting down): the request in hand is still
        answered, what waits behind it dropped."""
        self.stopped = True
        if self.in_flight is None:
            self.scope.cancel()

    async def run(self) -> None:
        try:
            with self.scope:
                if isinstance(self.stream, trio.SSLStream) and not await self._handshake(self.stream):
                    return
                await self._serve()
        finally:
            await trio.aclose_forcefully(self.stream)

    async def _handshake(self, stream: trio.SSLStream[trio.abc.Stream]) -> bool:
        """TLS: the handshake, in this task, under the handshake timeout; then the peer's principal.
        False (logged and counted) if it failed, timed out, or the certificate names nobody."""
        error: BaseException | None = None
        with trio.move_on_after(self.handshake_timeout_s):
            try:
                await stream.do_handshake()
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                error = exc
            else:
                try:
                    self.principal = peer_principal(stream.getpeercert(binary_form=True), self.mapping_rules)
                except Exception as exc:  # a malformed certificate, a DN no mapping rule maps
                    self.exchanges.tls_failed("principal", self.peer, str(exc))
                    return False
                return True
        self.exchanges.tls_failed(failure_reason(error), self.peer, _detail(error))
        return False

    # ------------------------------------------------------------------ the connection's task
    async def _serve(self) -> None:
        """Frames, one at a time, until the peer's end, a stop, or a frame that closes us."""
        buffer = self.buffer
        budget = self.budget
        ready = self._ready
        while not self.stopped:
            if ready:  # whole already: the read that brought it holds it (forced)
                payload: bytes | None = ready.popleft()
                assert payload is not None
                reservation = budget.reserve(len(payload), force=True)
            elif self._refusal is not None:  # refused in its turn: the frames before it were answered
                self._refuse(self._refusal, None)
                return
            elif buffer.announced_size:  # its prefix: reserve it all before reading on (or wait in line)
                payload = None
                reservation = budget.reserve(buffer.announced_size)
            elif not await self._receive():  # not even a prefix yet: nothing to reserve
                return
            else:
                continue
            self._reservation = reservation  # waiting for memory is busy, not idle
            try:
                async with reservation:
                    if payload is None and (payload := await self._rest_of_frame()) is None:
                        return
                    if not await self._exchange(payload):
                        return
            finally:
                self._reservation = None

    async def _receive(self) -> bool:
        """Read once: whole frames go to `_ready` (and are activity); False at the peer's end (or
        a reset: the same to us)."""
        fd = self._fd
        if fd >= 0:
            try:  # the answer went out early (`Pending.answer`): the next request may be here already
                data = os.read(fd, _READ_BYTES)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
                return True  # readable now: the caller reads again
            except OSError:
                return False
        else:
            try:
                data = bytes(await self.stream.receive_some(_READ_BYTES))
            except trio.BrokenResourceError:
                return False
        if not data:
            return False
        frames, refused = self.buffer.receive_frames(data)  # one slice for one whole frame
        if frames:
            self.last_activity = trio.current_time()
            self._ready.extend(frames)
        if refused is not None:
            self._refusal = refused
        return True

    async def _rest_of_frame(self) -> bytes | None:
        """Read until the frame whose prefix arrived (and is reserved) is whole; None at the end."""
        ready = self._ready
        while not ready:
            if self._refusal is not None or not await self._receive():
                return None
        return ready.popleft()

    async def _exchange(self, payload: bytes) -> bool:
        """One request: decode it, hand it on, await its outcome, send the answer. False: close."""
        if self.writer.draining:  # a shutdown began: nobody decides anything more
            return False
        pending = Pending(self.id, self.peer, payload, None, monotonic_ns(), wall_ns(), self.principal, self.host)
        self.in_flight = pending
        try:
            if len(payload) > LARGE_FRAME_BYTES:
                if not await self._decode_large(pending):
                    return False
            else:
                try:
                    pending.request = decode_served(payload, allowed=self.allowed)
                except DecodeError as exc:
                    if not self._not_decoded(pending, exc):
                        return False
                else:
                    pending.writer_hook = self._hook
                    await self._hand_on(pending)
            if not pending._resolved:  # Pending.outcome(), inlined: one coroutine less per request
                pending._waiter = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(pending._abort)
            else:  # answered at once (KIP-511's fallback): still a checkpoint per request
                await trio.lowlevel.checkpoint()
            frame = pending.frame
            if frame is not None:
                try:
                    if not 0 < pending.sent == len(frame):  # else the hook wrote it all (the hot path)
                        await self._send(frame, pending.sent)
                except _SEND_ERRORS:
                    frame = None
            if frame is None:
                self.exchanges.unanswered(pending)
                return False
            self.exchanges.answered(pending)
            return True
        except BaseException:  # the daemon's exit (cancelled) with the request in hand
            if pending.resolved or pending.request is not None:
                self.exchanges.unanswered(pending)
            raise
        finally:
            self.in_flight = None
            if self.stopped:
                self.scope.cancel()

    async def _send(self, frame: bytes, sent: int) -> None:
        """Send what the hook left of `frame` (`sent` bytes went, -1: the peer is gone), waiting
        for room while the peer does not read; OSError (or the stream's error) if the peer is gone."""
        fd = self._fd
        if fd < 0:  # TLS: a record's worth at a time, so that a slow reader holds no encrypted copy of it all
            view = memoryview(frame)
            for start in range(0, len(frame), _TLS_SEND_BYTES):
                await self.stream.send_all(view[start : start + _TLS_SEND_BYTES])
            return
        if sent == 0:  # the hook found the socket's buffer full, or an answer made in this task
            sent = _write(fd, frame)
        if sent < 0:
            raise BrokenPipeError(f"the peer {self.peer} is gone")
        if sent == len(frame):
            return
        rest = memoryview(frame)[sent:]
        while rest:  # a peer that does not read: wait for room
            await trio.lowlevel.wait_writable(fd)
            with contextlib.suppress(BlockingIOError):
                rest = rest[os.write(fd, rest) :]

    async def _decode_large(self, pending: Pending) -> bool:
        """Decode off the event loop, then hand on (or answer at once); False if refused or dropped."""
        decode = functools.partial(decode_served, pending.payload, allowed=self.allowed)
        error: DecodeError | None = None
        try:
            pending.request = await in_thread(decode)
        except DecodeError as exc:
            error = exc
        if self.stopped or self.writer.draining:  # never handed on: nobody would answer it
            pending.request = None
            return False
        if error is not None:
            return self._not_decoded(pending, error)
        await self._hand_on(pending)
        return True

    async def _hand_on(self, pending: Pending) -> None:
        """Submit, waiting (reading nothing) while the queue the request goes to is full."""
        while not self.writer.submit(pending):
            await self.writer.wait_for_room()

    def _not_decoded(self, pending: Pending, error: DecodeError) -> bool:
        """KIP-511: ApiVersions at a version we do not speak is answered at once (True); any other
        frame that does not decode is refused (False)."""
        if (
            isinstance(error, UnsupportedVersionError)
            and error.api_key == ApiKey.API_VERSIONS
            and error.correlation_id is not None
        ):
            pending.answer(api_versions_fallback(error.correlation_id))
            return True
        self._refuse(error, pending.payload)
        return False

    def _refuse(self, exc: DecodeError, payload: bytes | None) -> None:
        self.exchanges.refused(exc.reason, self.peer, payload, str(exc))
