"""What became of each inbound frame: counted in the metrics, captured, and logged when refused.

The connection reports here, downwards, and never to the daemon: a request answered (latency
and error code to the metrics, the exchange to the capture), a request left unanswered (its
request to the capture), a frame refused, a TLS handshake failed (a rate-limited log line and
the metric by reason).

Rules:
- Nothing here blocks or fails the request path: a capture row is one `deque.append`
  (`CaptureWriter.add`), the metrics are counters.
- A frame that was never decoded is captured with the api key, version and correlation id its
  first bytes name (`peek_request`), or not at all if it had none.
"""

from __future__ import annotations

import logging
from typing import Protocol

from protocol.capture import INBOUND, Exchange
from protocol.registry import peek_request

from ..runtime import monotonic_ns, wall_ns
from .logging_config import RateLimitedLogger
from .metrics import ControllerMetrics
from .pending import Pending

log = logging.getLogger("fencer.daemon")


class CaptureSink(Protocol):
    def add(self, exchange: Exchange) -> None: ...


class ExchangeRecorder:
    """The connections' outcomes, to the metrics, the capture (optional) and the log."""

    def __init__(self, metrics: ControllerMetrics, capture: CaptureSink | None) -> None:
        self.metrics = metrics
        self.capture = capture
        self.flood_log = RateLimitedLogger(log)  # a flood of bad frames or refused connections, logged sparsely

    def answered(self, pending: Pending) -> None:
        assert pending.request is not None or pending.frame is not None
        if pending.request is not None:
            now = monotonic_ns()
            header = pending.request.header
            self.metrics.request(
                header.request_api_key,
                header.request_api_version,
                pending.error_code,
                (now - pending.received_ns) / 1e9,
                (pending.decided_ns - pending.received_ns) / 1e9,
            )
        self._capture(pending, pending.frame)

    def unanswered(self, pending: Pending) -> None:
        self._capture(pending, None)

    def refused(self, reason: str, peer: str, payload: bytes | None, detail: str) -> None:
        self.flood_log.log(logging.WARNING, reason, "closing connection from %s: %s (%s)", peer, reason, detail)
        self.metrics.invalid_frame(reason)

    def tls_failed(self, reason: str, peer: str, detail: str) -> None:
        self.flood_log.log(
            logging.WARNING, f"tls:{reason}", "TLS handshake with %s failed: %s (%s)", peer, reason, detail
        )
        self.metrics.tls_handshake_failure(reason)

    def _capture(self, pending: Pending, frame: bytes | None) -> None:
        if self.capture is None or (pending.request is None and frame is None):
            return
        key, version, correlation = _identity(pending)
        self.capture.add(
            Exchange(
                pending.received_wall_ns,
                wall_ns() if frame is not None else None,
                INBOUND,
                pending.connection_id,
                pending.peer,
                key,
                version,
                correlation,
                pending.payload,
                frame[4:] if frame is not None else None,
            )
        )


def _identity(pending: Pending) -> tuple[int, int, int]:
    if pending.request is not None:
        header = pending.request.header
        return header.request_api_key, header.request_api_version, header.correlation_id
    key, version, correlation = peek_request(pending.payload)
    return key, version, correlation if correlation is not None else -1
