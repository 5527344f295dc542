"""What became of the control requests the channel sent: answers kept, counted, logged.

Rules:
- An answer's outcome is its top-level error, else its first partition error, else NONE; the
  metric counts it once with that outcome, `error_counts` counts every failed partition.
- Stale rejections (STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH, FENCED_LEADER_EPOCH) are answers
  like any other: logged as warnings, counted, and the order is never resent.
- Nothing grows with the number of requests sent: `recent_answers` keeps the last
  `RECENT_ANSWERS` outcomes only; the totals are counters. A log line names at most
  `LOGGED_PARTITIONS` partitions.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from typing import NamedTuple, Protocol

from protocol.error_codes import ErrorCode
from protocol.registry import api
from protocol.spec import Data

from .orders import ControlOrder
from .requests import response_errors

log = logging.getLogger("fencer.channel")

STALE_ERRORS = frozenset(
    {ErrorCode.STALE_BROKER_EPOCH, ErrorCode.STALE_CONTROLLER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH}
)
LOGGED_PARTITIONS = 20
#: Answers kept in `Outcomes.recent_answers` (for tests and debugging; the totals are counters).
RECENT_ANSWERS = 256


class ChannelMetrics(Protocol):
    def outbound_queue(self, broker_id: int, depth: int) -> None: ...
    def outbound_response(self, broker_id: int, api_key: int, error_code: int) -> None: ...
    def outbound_connection_failure(self, broker_id: int) -> None: ...


class SentRequest(NamedTuple):
    """One answered request: its outcome is the top-level error, else the first partition error, else 0."""

    broker_id: int
    api_key: int
    api_version: int
    error_code: int


class Outcomes:
    """The channel's record of answers: the recent ones, counters, and the log."""

    def __init__(self, metrics: ChannelMetrics | None) -> None:
        self._metrics = metrics
        #: the outcomes of the last `RECENT_ANSWERS` requests answered (or dropped as unsendable), oldest first
        self.recent_answers: deque[SentRequest] = deque(maxlen=RECENT_ANSWERS)
        #: (api key, error code) -> count, top-level and per partition
        self.error_counts: Counter[tuple[int, int]] = Counter()
        self.stale_rejections = 0

    def response(self, broker_id: int, order: ControlOrder, api_key: int, version: int, response: Data) -> None:
        """A broker answered one request of `order`."""
        top, failed = response_errors(order, response)
        self.count(broker_id, api_key, version, top, tuple(failed))

    def count(
        self, broker_id: int, api_key: int, version: int, top: int, failed: tuple[tuple[str, int, int], ...] = ()
    ) -> None:
        """Record one answer (or an order dropped with the error `top`): kept, counted and logged."""
        outcome = top or (failed[0][2] if failed else ErrorCode.NONE)
        self.recent_answers.append(SentRequest(broker_id, api_key, version, outcome))
        if self._metrics is not None:
            self._metrics.outbound_response(broker_id, api_key, outcome)
        for code in (top, *(code for _, _, code in failed)):
            if code != ErrorCode.NONE:
                self.error_counts[(api_key, code)] += 1
            if code in STALE_ERRORS:
                self.stale_rejections += 1
        if top != ErrorCode.NONE:
            log_error(broker_id, api_key, version, top, "the whole request")
        by_code: dict[int, list[str]] = {}
        for topic, partition, code in failed:
            by_code.setdefault(code, []).append(f"{topic}-{partition}")
        for code, names in by_code.items():
            shown = ", ".join(names[:LOGGED_PARTITIONS]) + (" ..." if len(names) > LOGGED_PARTITIONS else "")
            log_error(broker_id, api_key, version, code, f"{len(names)} partitions ({shown})")

    def negotiated(self, broker_id: int, api_key: int, version: int, error_code: int) -> None:
        """An ApiVersions answer: kept among the recent answers only (its errors are the session's)."""
        self.recent_answers.append(SentRequest(broker_id, api_key, version, error_code))


def log_error(broker_id: int, api_key: int, version: int, code: int, what: str) -> None:
    name = api(api_key).name
    try:
        label = f"{ErrorCode(code).name} ({code})"
    except ValueError:
        label = str(code)
    if code in STALE_ERRORS:
        log.warning("broker %d rejected %s v%d as stale (%s) for %s; not resent", broker_id, name, version, label, what)
    else:
        log.error("broker %d answered %s v%d with %s for %s", broker_id, name, version, label, what)
