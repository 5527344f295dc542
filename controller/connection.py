"""One client connection of the daemon: read frames, hand requests to the writer, answer in order.

Rules (docs/protocol.md, Kafka's SocketServer):
- Frames are read through the sans-IO `FrameBuffer`; the size limit is enforced from the prefix.
- Pipelined requests are decoded as they arrive and queued to the single writer in arrival
  order; their responses go out in request order, each once the writer has made it durable.
- ApiVersions at a version we do not speak is answered at once with a v0 body, error 35,
  listing only ApiVersions (KIP-511). An unknown api key, an unsupported version of any other
  API, an undecodable body, trailing bytes or an oversized size prefix close the connection
  without a response; it is logged with the peer and counted. Other connections never notice.
- A connection idle for `idle_timeout_s` is closed.
"""

from __future__ import annotations

import itertools
import logging
import math
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

    async def submit(self, pending: Pending) -> None: ...
    def answered(self, pending: Pending) -> None: ...
    def unanswered(self, pending: Pending) -> None: ...
    def invalid_frame(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None: ...
    def register_reader(self, scope: trio.CancelScope) -> None: ...
    def unregister_reader(self, scope: trio.CancelScope) -> None: ...


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
        self._send, self._receive = trio.open_memory_channel[Pending](math.inf)
        self._reader = trio.CancelScope()

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._respond)
                try:
                    await self._read()
                finally:
                    self._send.close()
        finally:
            await trio.aclose_forcefully(self.stream)

    async def _read(self) -> None:
        scope = self._reader
        self.host.register_reader(scope)
        try:
            with scope:
                while not self.host.draining:
                    with trio.move_on_after(self.host.idle_timeout_s) as idle:
                        data = await self.stream.receive_some(65536)
                    if idle.cancelled_caught:
                        log.info("closing idle connection %s from %s", self.id, self.peer)
                        return
                    if not data:
                        return
                    if not await self._frames(data):
                        return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            self.host.unregister_reader(scope)

    async def _frames(self, data: bytes) -> bool:
        """Take received bytes; False when the connection must close."""
        try:
            self.buffer.receive_data(data)
            while (payload := self.buffer.next_frame()) is not None:
                if not await self._request(payload):
                    return False
        except FrameTooLargeError as exc:
            self.host.invalid_frame("frame_too_large", self.peer, None, str(exc))
            return False
        return True

    async def _request(self, payload: bytes) -> bool:
        now, wall = time.monotonic_ns(), time.time_ns()
        try:
            request = decode_request(payload, allowed=INBOUND_API_KEYS)
        except UnsupportedVersionError as exc:
            if exc.api_key == API_VERSIONS_KEY and exc.correlation_id is not None:
                pending = Pending(self.id, self.peer, payload, None, now, wall)
                pending.frame = api_versions_fallback(exc.correlation_id)
                pending.done.set()
                await self._send.send(pending)
                return True
            self.host.invalid_frame(_reason(exc), self.peer, payload, str(exc))
            return False
        except DecodeError as exc:
            self.host.invalid_frame(_reason(exc), self.peer, payload, str(exc))
            return False
        pending = Pending(self.id, self.peer, payload, request, now, wall)
        await self._send.send(pending)
        await self.host.submit(pending)
        return True

    async def _respond(self) -> None:
        broken = False
        async for pending in self._receive:
            await pending.done.wait()
            if not broken and pending.frame is not None:
                try:
                    await self.stream.send_all(pending.frame)
                    self.host.answered(pending)
                    continue
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
            # no answer (the writer failed, or the peer left): close, as Kafka does
            broken = True
            self._reader.cancel()
            self.host.unanswered(pending)
