"""One client connection of the daemon: read frames, hand requests to the writer, answer in order.

Rules (docs/protocol.md, Kafka's SocketServer):
- Frames are read through the sans-IO `FrameBuffer`; the size limit is enforced from the prefix.
- One request at a time per connection, as Kafka does (it mutes a channel until the response
  is sent): pipelined requests are read, handed to the single writer and answered strictly in
  order, each once the writer has made it durable. Concurrency comes from connections.
- ApiVersions at a version we do not speak is answered at once with a v0 body, error 35,
  listing only ApiVersions (KIP-511). An unknown api key, an unsupported version of any other
  API, an undecodable body, trailing bytes or an oversized size prefix close the connection
  without a response; it is logged with the peer and counted. Other connections never notice.
- A connection idle for `idle_timeout_s` is closed (by the daemon's sweeper, which cancels
  `scope`; a connection in the middle of a request is never cancelled, only idle ones).
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from protocol.errors import (
    DecodeError,
    FrameTooLargeError,
    TrailingBytesError,
    TruncatedError,
    UnknownApiError,
    UnsupportedVersionError,
)
from protocol.framing import FrameBuffer
from protocol.headers import API_VERSIONS_KEY
from protocol.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.registry import INBOUND_API_KEYS, Request, api, decode_request, encode_response
from protocol.spec import Data

log = logging.getLogger("fencer.connection")
_IDS = itertools.count(1)


@dataclass(eq=False)
class Pending:
    """A request between arrival and its response."""

    connection_id: int
    peer: str
    payload: bytes
    request: Request | None
    received_ns: int  # monotonic, for latency
    received_wall_ns: int  # wall clock, for the capture
    decided_ns: int = 0
    response: Data | None = None
    frame: bytes | None = None  # the encoded response frame, once ready
    done: trio.Event = field(default_factory=trio.Event)


class Host(Protocol):
    """What a connection needs from the daemon."""

    max_frame_bytes: int
    idle_timeout_s: float
    draining: bool

    def submit(self, pending: Pending) -> None: ...
    def answered(self, pending: Pending) -> None: ...
    def unanswered(self, pending: Pending) -> None: ...
    def invalid_frame(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None: ...
    def register(self, connection: Connection) -> None: ...
    def unregister(self, connection: Connection) -> None: ...


def api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: the v0 answer to an ApiVersions version we do not speak."""
    info = api(API_VERSIONS_KEY)
    entry = ApiVersionsResponseApiVersion(
        api_key=API_VERSIONS_KEY, min_version=info.versions.lowest, max_version=info.versions.highest
    )
    body = ApiVersionsResponse(error_code=35, api_keys=(entry,))
    return encode_response(body, 0, correlation_id)


def _reason(exc: DecodeError) -> str:
    if isinstance(exc, UnknownApiError):
        return "unknown_api"
    if isinstance(exc, UnsupportedVersionError):
        return "unsupported_version"
    if isinstance(exc, TrailingBytesError):
        return "trailing_bytes"
    if isinstance(exc, FrameTooLargeError):
        return "frame_too_large"
    if isinstance(exc, TruncatedError):
        return "truncated"
    return "undecodable"


class Connection:
    def __init__(self, host: Host, stream: trio.SocketStream) -> None:
        self.host = host
        self.stream = stream
        self.id = next(_IDS)
        try:
            address: Any = stream.socket.getpeername()
            self.peer = f"{address[0]}:{address[1]}"
        except OSError:
            self.peer = "unknown"
        self.buffer = FrameBuffer(host.max_frame_bytes)
        #: cancelled by the host (idle, or shutting down) only while `busy` is False
        self.scope = trio.CancelScope()
        self.busy = False
        self.last_activity = trio.current_time()

    async def run(self) -> None:
        self.host.register(self)
        try:
            with self.scope:
                await self._serve()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.host.unregister(self)
            await trio.aclose_forcefully(self.stream)

    def idle_for(self, now: float) -> float:
        """Seconds since the last bytes arrived, or 0 while a request is in hand."""
        return 0.0 if self.busy else now - self.last_activity

    async def _serve(self) -> None:
        while not self.host.draining:
            # one scope per connection, not per read: the host's sweeper closes idle connections
            data = await self.stream.receive_some(65536)
            if not data:
                return
            self.busy = True
            self.last_activity = trio.current_time()
            try:
                self.buffer.receive_data(data)
                while (payload := self.buffer.next_frame()) is not None:
                    if not await self._request(payload):
                        return
            except FrameTooLargeError as exc:
                self.host.invalid_frame("frame_too_large", self.peer, None, str(exc))
                return
            finally:
                self.busy = False

    async def _request(self, payload: bytes) -> bool:
        """Decode, hand to the writer, wait, answer; False when the connection must close."""
        now, wall = time.monotonic_ns(), time.time_ns()
        try:
            request = decode_request(payload, allowed=INBOUND_API_KEYS)
        except UnsupportedVersionError as exc:
            if exc.api_key != API_VERSIONS_KEY or exc.correlation_id is None:
                self.host.invalid_frame(_reason(exc), self.peer, payload, str(exc))
                return False
            pending = Pending(self.id, self.peer, payload, None, now, wall)
            pending.frame = api_versions_fallback(exc.correlation_id)
            return await self._answer(pending)
        except DecodeError as exc:
            self.host.invalid_frame(_reason(exc), self.peer, payload, str(exc))
            return False
        pending = Pending(self.id, self.peer, payload, request, now, wall)
        self.host.submit(pending)
        await pending.done.wait()
        return await self._answer(pending)

    async def _answer(self, pending: Pending) -> bool:
        if pending.frame is None:  # the writer could not answer it: close, as Kafka does
            self.host.unanswered(pending)
            return False
        try:
            await self.stream.send_all(pending.frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.host.unanswered(pending)
            return False
        self.host.answered(pending)
        return True
