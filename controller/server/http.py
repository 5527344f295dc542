"""The metrics listener: a minimal HTTP/1.1 server on trio serving /metrics, /state and /healthz.

Routes (GET only):
- `/metrics`: `ControllerMetrics.render()`, Prometheus' text format 0.0.4;
- `/state`: the document of `controller.server.state_json` (`state_json_pieces` of a frozen copy of
  the engine's state, sent in blocks), as JSON (503 "starting" while there is no engine yet);
- `/healthz`: 200 "ok" once the engine exists, 503 "starting" before.
A query string is ignored. Another path is 404; another method on a route is 405.

Rules:
- HTTP/1.1 is parsed by h11 (the sans-IO HTTP library of the trio ecosystem): this module feeds
  it the bytes as they arrive and sends the bytes it writes. It takes what RFC 9112 allows and
  nothing else: bare newlines, HTTP/1.0, a head in as many TCP writes as the client likes; an
  HTTP/1.1 request without `Host` is malformed (RFC 9112, 3.2).
- One request per connection: every response says `Connection: close` and the connection is
  closed after it (no keep-alive: pipelined requests after the first are never answered; request
  bodies are never read).
- The request line, headers and blank line ("the head") must arrive within `MAX_HEAD_BYTES`
  (16 KiB, also h11's `max_incomplete_event_size`); a longer head, a malformed request line or
  header line (anything h11 refuses), a version other than HTTP/1.x or a target that is not a
  path is answered 400 and closed. h11 holds at most `MAX_HEAD_BYTES` and one read beyond.
- A connection that sends nothing for `idle_timeout_s` (10 s) is closed without a response; so is
  one that closes its side before its head is complete.
- Each connection runs in its own task of the listener's connection nursery, with its own
  cancel scopes for the timeouts; nothing a client sends (or fails to send) may escape it: I/O
  errors close the connection quietly, a bug while answering is logged and answered 500.
- `/state` never holds the event loop for long (at 400,000 partitions its body is ~65 MB of
  JSON built in seconds): the state is frozen on the loop (the engine's `freeze()`, read through
  `engine_views.StateView`: copies of containers only, milliseconds), then the body is built from
  the frozen copy in a worker thread, one build at a time (concurrent requests wait their turn,
  asynchronously; each is frozen only when its build starts, so at most one frozen copy is
  alive). The body is the state at that freeze, whatever the loop replays meanwhile. On
  cancellation (shutdown) the build is abandoned: it reads only its own frozen copy.
- A body is sent as the blocks it was built in (about `BODY_BLOCK_BYTES` each), never joined into one
  giant bytes object. A client that has not taken a whole block after `idle_timeout_s` is closed.
- After a response the write side is shut and what the client still sends is drained briefly,
  so that closing does not reset the connection before the client has read the response.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import h11
import trio

from ..state.frozen import FrozenState
from .engine_views import StateProvider
from .listen import bound_port, open_listeners
from .metrics import ControllerMetrics
from .state_json import state_json_pieces

log = logging.getLogger("fencer.http")

MAX_HEAD_BYTES = 16 * 1024
DEFAULT_IDLE_TIMEOUT_S = 10.0
LINGER_S = 1.0  # how long to drain a client's unread bytes after answering
LINGER_BYTES = 256 * 1024
BODY_BLOCK_BYTES = 256 * 1024  # a block of a large body: one send, one piece of memory
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_BAD_REQUEST_DETAIL = 200  # characters of h11's complaint in a 400's body (it may quote the request)
_ROUTES = ("/metrics", "/state", "/healthz")

#: The /state body of a frozen state, as blocks of bytes; runs in a worker thread.
StateBody = Callable[[FrozenState], list[bytes]]


class BadRequest(Exception):
    """The head is not an HTTP/1.x request this server understands (answered 400)."""


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: Sequence[bytes]  # its blocks, sent one after the other
    allow: str | None = None

    def encode(self, connection: h11.Connection, include_body: bool = True) -> list[bytes]:
        """The blocks to send, as h11 writes them: the head joined to the first block of the body
        (one send for a small response), then the others."""
        headers = [
            ("Content-Type", self.content_type),
            ("Content-Length", str(sum(len(block) for block in self.body))),
            ("Connection", "close"),
        ]
        if self.allow is not None:
            headers.append(("Allow", self.allow))
        head = connection.send(h11.Response(status_code=self.status, headers=headers, reason=_REASONS[self.status]))
        assert head is not None
        out = [head]
        for block in self.body if include_body else ():
            out.extend(connection.send_with_data_passthrough(h11.Data(data=block)) or ())
        out.append(connection.send(h11.EndOfMessage()) or b"")  # b"" with a Content-Length
        if len(out) > 1:
            out[:2] = [out[0] + out[1]]
        return [block for block in out if block]


def text(status: int, body: str) -> Response:
    return Response(status, TEXT_CONTENT_TYPE, (body.encode(),))


def build_state_body(frozen: FrozenState) -> list[bytes]:
    """The /state body: `state_json_pieces` gathered into blocks of about `BODY_BLOCK_BYTES`."""
    return list(blocks(state_json_pieces(frozen), BODY_BLOCK_BYTES))


def blocks(pieces: Iterable[str], block_size: int) -> Iterator[bytes]:
    """ASCII `pieces` joined into blocks of at least `block_size` bytes (the last may be shorter)."""
    pending: list[str] = []
    size = 0
    for piece in pieces:
        pending.append(piece)
        size += len(piece)
        if size >= block_size:
            yield "".join(pending).encode()
            pending.clear()
            size = 0
    if pending:
        yield "".join(pending).encode()


async def serve_http(
    host: str,
    port: int,
    metrics: ControllerMetrics,
    state_provider: StateProvider,
    *,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    state_body: StateBody = build_state_body,
    quorum_provider: Callable[[], dict[str, Any]] | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; `task_status.started(port)` reports the bound port (useful with port 0).

    `state_body` builds the /state body in a worker thread (tests pass one that waits on a signal)."""
    listeners = await open_listeners(host, port, "--metrics-listen")
    server = HttpServer(metrics, state_provider, idle_timeout_s, state_body, quorum_provider)
    port = bound_port(listeners[0])
    log.info("metrics listener on %s:%d", host, port)
    async with trio.open_nursery() as connection_nursery:
        task_status.started(port)
        await trio.serve_listeners(server.handle, listeners, handler_nursery=connection_nursery)


@dataclass(frozen=True)
class HttpServer:
    metrics: ControllerMetrics
    #: the engine's state (the engine itself in the daemon), None while it does not exist yet
    state_provider: StateProvider
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    state_body: StateBody = build_state_body
    #: who leads (`Quorum.view`): the /state document's first member, "quorum"
    quorum_provider: Callable[[], dict[str, Any]] | None = None
    #: one /state build at a time: each holds a frozen copy and its body in memory
    state_builds: trio.CapacityLimiter = field(default_factory=lambda: trio.CapacityLimiter(1))

    async def handle(self, stream: trio.SocketStream) -> None:
        """One connection: read one request head, answer it, close. Never raises (but Cancelled)."""
        try:
            await self._exchange(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("http connection dropped: %r", exc)
        except Exception:
            log.exception("http connection failed")
        finally:
            await trio.aclose_forcefully(stream)

    async def _exchange(self, stream: trio.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        method = "GET"  # until a request line says otherwise: a refusal has a body
        try:
            request = await read_request(stream, connection, self.idle_timeout_s)
            if request is None:
                return
            method = request.method.decode("ascii")
            path = path_of(request)
        except BadRequest as exc:
            log.debug("http bad request: %s", exc)
            response = text(400, f"bad request: {str(exc)[:_BAD_REQUEST_DETAIL]}\n")
        else:
            response = await self.respond(method, path)
        await send_and_linger(stream, response.encode(connection, include_body=method != "HEAD"), self.idle_timeout_s)

    async def respond(self, method: str, path: str) -> Response:
        """The response to `method path` (the query string already removed)."""
        if path not in _ROUTES:
            return text(404, "not found\n")
        if method != "GET":
            return Response(405, TEXT_CONTENT_TYPE, (b"method not allowed\n",), allow="GET")
        try:
            return await self._route(path)
        except Exception:
            log.exception("http %s failed", path)
            return text(500, "internal error\n")

    async def _route(self, path: str) -> Response:
        if path == "/metrics":
            return Response(200, METRICS_CONTENT_TYPE, (self.metrics.render(),))
        engine = self.state_provider()
        if engine is None:
            return text(503, "starting\n")
        if path == "/healthz":
            return text(200, "ok\n")
        async with self.state_builds:
            frozen = engine.freeze()  # on the loop, so that the copy is one consistent state
            quorum = self.quorum_provider() if self.quorum_provider is not None else None
            body = await trio.to_thread.run_sync(self.state_body, frozen, abandon_on_cancel=True)
        if quorum is not None and body and body[0].startswith(b"{"):
            body = [b'{"quorum": ' + json.dumps(quorum).encode() + b", " + body[0][1:], *body[1:]]
        return Response(200, JSON_CONTENT_TYPE, body)


async def read_request(
    stream: trio.abc.ReceiveStream, connection: h11.Connection, idle_timeout_s: float
) -> h11.Request | None:
    """The request's head as h11 parsed it, or None when the client sent nothing more for
    `idle_timeout_s` or closed its side first; `BadRequest` for whatever h11 refuses and for a
    head over `MAX_HEAD_BYTES`. h11 refuses an incomplete head once it holds more than that; a
    head that arrived whole in the same read is measured here, from what h11 has not consumed."""
    received = 0
    while True:
        try:
            event = connection.next_event()
        except h11.RemoteProtocolError as exc:
            raise BadRequest(str(exc)) from None
        if isinstance(event, h11.Request):
            if received - len(connection.trailing_data[0]) > MAX_HEAD_BYTES:
                raise BadRequest(f"request head over {MAX_HEAD_BYTES} bytes")
            return event
        assert event is h11.NEED_DATA, event  # nothing else comes before a request: no EOF is fed
        with trio.move_on_after(idle_timeout_s) as idle:
            chunk = await stream.receive_some(MAX_HEAD_BYTES)
        if idle.cancelled_caught or not chunk:
            return None
        received += len(chunk)
        connection.receive_data(bytes(chunk))  # a no-op on the bytes a socket gives


def path_of(request: h11.Request) -> str:
    """The path a request names, its query string removed; `BadRequest` for what h11 lets pass
    but this server does not serve: another version than HTTP/1.x, a target that is not a path."""
    if not request.http_version.startswith(b"1."):
        raise BadRequest(f"HTTP/{request.http_version.decode('ascii')} is not HTTP/1.x")
    target = request.target.decode("ascii")  # h11: visible ASCII only
    if not target.startswith("/"):
        raise BadRequest(f"request target {target[:80]!r} is not a path")
    return target.partition("?")[0]


async def send_and_linger(stream: trio.SocketStream, data: Sequence[bytes], stall_timeout_s: float) -> None:
    """Send the blocks of `data`, shut the write side, and drain what the client still sends for a
    moment. A block the client has not taken whole after `stall_timeout_s` ends the exchange there."""
    for block in data:
        with trio.move_on_after(stall_timeout_s) as stalled:
            await stream.send_all(block)
        if stalled.cancelled_caught:
            log.debug("http client read nothing for %.1fs: closing", stall_timeout_s)
            return
    await stream.send_eof()
    drained = 0
    with trio.move_on_after(LINGER_S):
        while drained < LINGER_BYTES:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            drained += len(chunk)
