"""A request between its arrival on a connection and its outcome, and who takes it on.

Rules:
- A `Pending` carries one decoded request (with who sent it: the connection's principal and
  its peer's host) to whoever decides it (the writer, or the quorum for its RPCs: a
  `RequestSink`), which resolves its one-shot outcome exactly once: `answer(frame)` or
  `close_unanswered()`. The connection's task awaits the outcome and sends the frame.
- The answer carries bytes, never the response object: a connection whose peer reads slowly
  holds an encoded frame, not a tree of objects.
- With the connection's non-blocking write (`writer_hook`, a plain socket's hot path), `answer`
  writes as much of the frame as the socket takes at once, in the answering task, while the
  connection's task is parked on the outcome; a cancelled wait clears the hook first, so nothing
  is written to a descriptor its connection is closing.
- What became of each request is reported downwards (`ExchangeSink`: metrics, capture, log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

from protocol.registry import Request
from protocol.spec import Data

from ..auth.authorizer import java_host_address
from ..ops.authorization import RequestContext
from .tls import ANONYMOUS

#: Frames above this many bytes are decoded, and answered, off the event loop.
LARGE_FRAME_BYTES = 1 << 20


class Pending:
    """A request between arrival and its outcome, which whoever decides it resolves once:
    `answer(frame)` or `close_unanswered()`; the connection's task awaits it (`outcome`)."""

    __slots__ = (
        "_resolved",
        "_waiter",
        "connection_id",
        "decided_ns",
        "error_code",
        "frame",
        "host",
        "payload",
        "peer",
        "principal",
        "received_ns",
        "received_wall_ns",
        "request",
        "response",
        "sent",
        "writer_hook",
    )

    def __init__(
        self,
        connection_id: int,
        peer: str,
        payload: bytes,
        request: Request | None,
        received_ns: int,
        wall_ns: int,
        principal: str = ANONYMOUS,
        host: str = "",
    ) -> None:
        self.connection_id = connection_id
        self.peer = peer  # HOST:PORT
        self.principal = principal  # who sent it: "User:ANONYMOUS", or from the TLS client certificate
        self.host = host  # the peer's address (an authorizer's host)
        self.payload = payload
        self.request = request
        self.received_ns = received_ns  # monotonic, for latency
        self.received_wall_ns = wall_ns  # wall clock, for the capture
        self.decided_ns = 0
        #: the decided response, until it is encoded (then only its frame and error code are kept:
        #: a connection whose peer reads slowly holds bytes, not a tree of objects)
        self.response: Data | None = None
        self.error_code = 0  # the error the answer reports (`response_error_code`), for the metrics
        self.frame: bytes | None = None  # the encoded response frame, once answered
        #: the connection's non-blocking write, tried at once by `answer` (a plain socket's hot path)
        self.writer_hook: Callable[[bytes], int] | None = None
        self.sent = 0  # bytes of `frame` the hook wrote (-1: the peer is gone)
        self._resolved = False
        self._waiter: trio.lowlevel.Task | None = None

    @property
    def resolved(self) -> bool:
        return self._resolved

    def answer(self, frame: bytes, error_code: int = 0) -> None:
        """The response frame to send, and the error it reports (the writer's or the quorum's task;
        never blocks). With the connection's hook, as much of it as the socket takes is written at
        once: the peer has its answer before the connection's task next runs."""
        self.frame = frame
        self.error_code = error_code
        self.response = None
        hook = self.writer_hook
        if hook is not None:
            self.sent = hook(frame)
        self._resolve()

    def close_unanswered(self) -> None:
        """No answer, ever: the connection closes without one, as Kafka does."""
        self.frame = None
        self._resolve()

    def _resolve(self) -> None:
        assert not self._resolved, "a request's outcome is resolved once"
        self._resolved = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            trio.lowlevel.reschedule(waiter)

    async def outcome(self) -> bytes | None:
        """Wait for the outcome: the frame to send, or None (close unanswered)."""
        if not self._resolved:
            self._waiter = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)
        return self.frame

    def _abort(self, raise_cancel: object) -> trio.lowlevel.Abort:
        self._waiter = None  # resolved later: nobody to wake
        self.writer_hook = None  # and nothing written to a descriptor its connection is closing
        return trio.lowlevel.Abort.SUCCEEDED


class RequestSink(Protocol):
    """Where decoded requests go (the daemon's router: the writer, the quorum): it resolves their
    outcomes. `submit` takes a request (True) or not now (False: the queue it goes to is full;
    the connection awaits `wait_for_room`, reading nothing, and submits it again)."""

    @property
    def draining(self) -> bool: ...

    def submit(self, pending: Pending) -> bool: ...

    async def wait_for_room(self) -> None: ...


class ExchangeSink(Protocol):
    """Where the connection reports what became of each frame (`controller.server.exchanges`)."""

    def answered(self, pending: Pending) -> None: ...
    def unanswered(self, pending: Pending) -> None: ...
    def refused(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None: ...
    def tls_failed(self, reason: str, peer: str, detail: str) -> None: ...


def request_context(pending: Pending) -> RequestContext:
    """Who asks, as an authorizer sees it: the connection's principal and its peer's address in
    Java's text (Kafka compares ACL hosts with InetAddress.getHostAddress())."""
    try:
        host = java_host_address(pending.host)
    except ValueError:  # not an IP address (a Unix socket's path, "unknown"): as given
        host = pending.host
    return RequestContext(pending.principal, host)
