"""A client connection to the controller: one request in flight, correlation ids checked, moving
through the controllers of the fleet's `--controller` list.

Rules:
- One request at a time (a lock: several tasks may share a connection, e.g. the admin's); connects
  on first use (and again after any failure). Each request gets the next correlation id;
  the answer must carry it. Requests go out with the broker's client id (ControlledShutdown v0's
  header has none: protocol.registry leaves it out).
- A network error, a closed connection or a timeout raises `ConnectionLost` (`sent`: whether the
  request may have reached the controller; False when no connection could be opened); an answer
  that breaks the protocol (undecodable, wrong correlation id, oversized frame) raises `BadAnswer`.
  Either way the connection is closed first, so the next request starts on a fresh one: nothing a
  controller sends can leave the connection in an unknown state.
- Several controllers (a quorum): the connection starts at the first address and moves
  to the next one, in a ring, when an answer says NOT_CONTROLLER (`model.answers.not_controller`:
  the answer is still returned, for the caller to count and retry as any retriable error), when no
  connection can be opened, or when the connection breaks or times out during an exchange, as a
  Kafka broker moves through its controller.quorum.voters. Each move closes the connection and is
  reported to `on_switch(from, to, reason, api, detail)` (reasons: "not-controller",
  "connect-failed", "connection-lost"). The caller's retry backoff paces the moves. A connection
  closed by `drop()` from another task (the fleet's own fault) is no sign of the controller: the
  next request reconnects to the same address. With one address nothing ever moves.
- `drop()` closes the connection from another task (a fault): a request in flight fails with
  `ConnectionLost`.
- `answered_by`: the controller (HOST:PORT) that gave the last answer, whatever it said.
- Every exchange, answered or not, goes to `capture` (protocol.capture rows, outbound).
- TLS (`tls`, the fleet's client context: `broker_sim.shell.tls`): each connection's handshake is
  done as it opens, within the connect timeout, the controller's name checked against the host
  dialled. A failed handshake is a connection that could not be opened (`sent` False, the
  TLS error in the message), and moves on as one. None: plain TCP, as before.
"""

from __future__ import annotations

import itertools
import ssl
import struct
from collections.abc import Callable, Sequence

import trio

from broker_sim.model.answers import not_controller
from protocol.capture import OUTBOUND, Exchange
from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.registry import api, decode_response, encode_request
from protocol.spec import Data

from .runtime import wall_ns
from .tls import open_stream

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 5.0
CONNECTION_IDS = itertools.count(1)
_CORRELATION = struct.Struct(">i")
NOT_CONTROLLER = "not-controller"
CONNECT_FAILED = "connect-failed"
CONNECTION_LOST = "connection-lost"

#: A controller's address: (host, port).
Address = tuple[str, int]
#: `on_switch(from HOST:PORT, to HOST:PORT, reason, api name, detail)`
OnSwitch = Callable[[str, str, str, str, str], None]


def peer_name(address: Address) -> str:
    """HOST:PORT, as the capture's `peer` column has always had it."""
    host, port = address
    return f"{host}:{port}"


class ConnectionLost(Exception):
    """No answer: the connection failed, closed or timed out. `sent`: the request may have reached
    the controller (False: no connection could be opened); `dropped`: the fleet closed it (a fault)."""

    def __init__(self, message: str, *, sent: bool = True, dropped: bool = False) -> None:
        super().__init__(message)
        self.sent = sent
        self.dropped = dropped


class BadAnswer(Exception):
    """An answer that broke the protocol."""


class ControllerConnection:
    def __init__(
        self,
        controllers: Sequence[Address],
        client_id: str | None,
        capture: Callable[[Exchange], None] | None = None,
        on_switch: OnSwitch | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        if not controllers:
            raise ValueError("a controller connection needs at least one address")
        self.controllers = tuple(controllers)
        self.index = 0  # the address in use
        self.client_id = client_id
        self.capture = capture
        self.on_switch = on_switch
        self.tls = tls
        self.last_correlation_id = 0
        self.answered_by = ""  # HOST:PORT of the last answer's controller
        self._stream: trio.abc.Stream | None = None
        self._frames = FrameBuffer(MAX_RESPONSE_BYTES)
        self._correlation = 0
        self._connection_id = 0
        self._lock = trio.Lock()

    @property
    def address(self) -> Address:
        return self.controllers[self.index]

    @property
    def peer(self) -> str:
        """The controller in use, as HOST:PORT."""
        return peer_name(self.address)

    async def request(self, body: Data, version: int, timeout_s: float) -> Data:
        """Send one request and return the decoded answer."""
        async with self._lock:
            try:
                response = await self._request(body, version, timeout_s)
            except ConnectionLost as exc:
                if not exc.dropped:
                    await self._move_on(body, CONNECTION_LOST if exc.sent else CONNECT_FAILED, str(exc))
                raise
            if not_controller(response):
                await self._move_on(body, NOT_CONTROLLER, "the answer says NOT_CONTROLLER (41)")
            return response

    async def _request(self, body: Data, version: int, timeout_s: float) -> Data:
        stream = await self._connected()
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        correlation_id = self.last_correlation_id = self._correlation
        frame = encode_request(body, version, correlation_id, client_id=self.client_id)
        sent_ns = wall_ns()
        payload: bytes | None = None
        peer = self.peer
        try:
            with trio.fail_after(timeout_s):
                await stream.send_all(frame)
                payload = await self._receive(stream)
        except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            dropped_by_us = self._stream is not stream  # drop() from another task: a fault of the fleet's
            await self.drop()
            if dropped_by_us:
                raise ConnectionLost(f"{peer}: dropped by the fleet", dropped=True) from exc
            raise ConnectionLost(f"{peer}: {type(exc).__name__}: {exc}") from exc
        except DecodeError as exc:  # an oversized frame prefix
            await self.drop()
            raise BadAnswer(str(exc)) from exc
        finally:
            self._record(body, version, correlation_id, frame, sent_ns, payload, peer)
        if payload is None:
            await self.drop()
            raise ConnectionLost(f"{peer}: the controller closed the connection")
        self.answered_by = peer
        return await self._decode(payload, body.API.key, version, correlation_id)

    async def _move_on(self, body: Data, reason: str, detail: str) -> None:
        """Go on at the next controller of the list (see the module rules); nothing with one address."""
        if len(self.controllers) == 1:
            return
        await self.drop()
        before = self.peer
        self.index = (self.index + 1) % len(self.controllers)
        if self.on_switch is not None:
            self.on_switch(before, self.peer, reason, api(body.API.key).name, detail)

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

    async def _connected(self) -> trio.abc.Stream:
        if self._stream is not None:
            return self._stream
        host, port = self.address
        try:
            with trio.fail_after(CONNECT_TIMEOUT_S):
                stream = await self._open(host, port)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
            cause = exc.__cause__
            why = (
                f"TLS handshake failed: {cause}" if isinstance(cause, ssl.SSLError) else str(exc) or type(exc).__name__
            )
            raise ConnectionLost(f"cannot connect to {self.peer}: {why}", sent=False) from exc
        self._stream = stream
        self._frames = FrameBuffer(MAX_RESPONSE_BYTES)
        self._connection_id = next(CONNECTION_IDS)
        return stream

    async def _open(self, host: str, port: int) -> trio.abc.Stream:
        return await open_stream(host, port, self.tls)

    async def _receive(self, stream: trio.abc.Stream) -> bytes | None:
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
        self,
        body: Data,
        version: int,
        correlation_id: int,
        frame: bytes,
        sent_ns: int,
        payload: bytes | None,
        peer: str,
    ) -> None:
        if self.capture is None:
            return
        answered_ns = wall_ns() if payload is not None else None
        self.capture(
            Exchange(
                sent_ns,
                answered_ns,
                OUTBOUND,
                self._connection_id,
                peer,
                body.API.key,
                version,
                correlation_id,
                frame[4:],
                payload,
            )
        )
