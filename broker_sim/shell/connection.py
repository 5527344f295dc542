"""A client connection to the controller: one request in flight, correlation ids checked.

Rules:
- One request at a time (a lock: several tasks may share a connection, e.g. the admin's); connects
  on first use (and again after any failure). Each request gets the next correlation id;
  the answer must carry it. Requests go out with the broker's client id (ControlledShutdown v0's
  header has none: protocol.registry leaves it out).
- A network error, a closed connection or a timeout raises `ConnectionLost`; an answer that breaks
  the protocol (undecodable, wrong correlation id, oversized frame) raises `BadAnswer`. Either
  way the connection is closed first, so the next request starts on a fresh one: nothing a
  controller sends can leave the connection in an unknown state.
- `drop()` closes the connection from another task (a fault): a request in flight fails with
  `ConnectionLost`.
- Every exchange, answered or not, goes to `capture` (protocol.capture rows, outbound).
"""

from __future__ import annotations

import itertools
import struct
import time
from collections.abc import Callable

import trio

from protocol.capture import OUTBOUND, Exchange
from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.registry import decode_response, encode_request
from protocol.spec import Data

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 5.0
CONNECTION_IDS = itertools.count(1)
_CORRELATION = struct.Struct(">i")


class ConnectionLost(Exception):
    """No answer: the connection failed, closed or timed out."""


class BadAnswer(Exception):
    """An answer that broke the protocol."""


class ControllerConnection:
    def __init__(
        self, host: str, port: int, client_id: str | None, capture: Callable[[Exchange], None] | None = None
    ) -> None:
        self.host = host
        self.port = port
        self.peer = f"{host}:{port}"
        self.client_id = client_id
        self.capture = capture
        self.last_correlation_id = 0
        self._stream: trio.SocketStream | None = None
        self._frames = FrameBuffer(MAX_RESPONSE_BYTES)
        self._correlation = 0
        self._connection_id = 0
        self._lock = trio.Lock()

    async def request(self, body: Data, version: int, timeout_s: float) -> Data:
        """Send one request and return the decoded answer."""
        async with self._lock:
            return await self._request(body, version, timeout_s)

    async def _request(self, body: Data, version: int, timeout_s: float) -> Data:
        stream = await self._connected()
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        correlation_id = self.last_correlation_id = self._correlation
        frame = encode_request(body, version, correlation_id, client_id=self.client_id)
        sent_ns = time.time_ns()
        payload: bytes | None = None
        try:
            with trio.fail_after(timeout_s):
                await stream.send_all(frame)
                payload = await self._receive(stream)
        except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            await self.drop()
            raise ConnectionLost(f"{type(exc).__name__}: {exc}") from exc
        except DecodeError as exc:  # an oversized frame prefix
            await self.drop()
            raise BadAnswer(str(exc)) from exc
        finally:
            self._record(body, version, correlation_id, frame, sent_ns, payload)
        if payload is None:
            await self.drop()
            raise ConnectionLost("the controller closed the connection")
        return await self._decode(payload, body.API.key, version, correlation_id)

    async def _decode(self, payload: bytes, api_key: int, version: int, correlation_id: int) -> Data:
        if len(payload) < 4 or _CORRELATION.unpack_from(payload)[0] != correlation_id:
            await self.drop()
            got = _CORRELATION.unpack_from(payload)[0] if len(payload) >= 4 else None
            raise BadAnswer(f"correlation id {got}, expected {correlation_id}")
        try:
            return decode_response(payload, api_key, version)[1]
        except DecodeError as exc:
            await self.drop()
            raise BadAnswer(f"undecodable answer: {exc}") from exc

    async def _connected(self) -> trio.SocketStream:
        if self._stream is not None:
            return self._stream
        try:
            with trio.fail_after(CONNECT_TIMEOUT_S):
                stream = await trio.open_tcp_stream(self.host, self.port)
        except (OSError, trio.TooSlowError) as exc:
            raise ConnectionLost(f"cannot connect to {self.peer}: {exc}") from exc
        self._stream = stream
        self._frames = FrameBuffer(MAX_RESPONSE_BYTES)
        self._connection_id = next(CONNECTION_IDS)
        return stream

    async def _receive(self, stream: trio.SocketStream) -> bytes | None:
        while (payload := self._frames.next_frame()) is None:
            data = await stream.receive_some(65536)
            if not data:
                return None
            self._frames.receive_data(data)
        return payload

    async def drop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await trio.aclose_forcefully(stream)

    def _record(
        self, body: Data, version: int, correlation_id: int, frame: bytes, sent_ns: int, payload: bytes | None
    ) -> None:
        if self.capture is None:
            return
        answered_ns = time.time_ns() if payload is not None else None
        self.capture(
            Exchange(
                sent_ns,
                answered_ns,
                OUTBOUND,
                self._connection_id,
                self.peer,
                body.API.key,
                version,
                correlation_id,
                frame[4:],
                payload,
            )
        )
