"""Broker heartbeats with a deadline: one the writer has not reached in time is answered
REQUEST_TIMED_OUT, and its broker's session is kept.

Kafka's controller gives each BrokerHeartbeat a deadline of half the broker heartbeat interval
(`broker.heartbeat.interval.ms`, 2 s: 1 s) and, when its event is still queued then, answers
REQUEST_TIMED_OUT and touches the broker's session (`processExpiredBrokerHeartbeat`, "controller
event queue overloaded"): the broker was alive when it sent it, so a controller busy with long
work (a controlled shutdown moving 500,000 ISR entries) fences nobody for its own delay, and no
broker waits longer than the deadline for an answer. The broker retries, as after any error.

Rules:
- A heartbeat is watched from `waiting` (the writer's `submit`, while active) until `taken`
  (the writer begins deciding it): one the writer reaches is decided, however late.
- At a watched heartbeat's deadline, `run` hands it to the writer's `time_out` (which keeps the
  session, answers it at once and counts it); the writer skips it when it reaches it (resolved).
- Cost: a deque append, a set add and a set discard per heartbeat; the watch wakes at most once
  per deadline, and drops the heartbeats already taken at each wake.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable

import trio

from ..runtime import monotonic_ns
from .pending import Pending

log = logging.getLogger("fencer.writer")

#: Kafka's broker.heartbeat.interval.ms default; a heartbeat's deadline is half of it
DEFAULT_HEARTBEAT_INTERVAL_MS = 2000
#: at most one warning per this many seconds (each timed-out heartbeat is counted in the metrics)
LOG_EVERY_S = 10.0


class HeartbeatDeadlines:
    def __init__(self, deadline_ns: int) -> None:
        self.deadline_ns = deadline_ns  # from submission
        self._deadlines: deque[tuple[int, Pending]] = deque()  # in submission order: sorted
        self._waiting: set[Pending] = set()
        self._wake: trio.Event | None = None
        self.timed_out = 0  # heartbeats timed out, in all
        self._logged_at: float | None = None

    def waiting(self, pending: Pending) -> None:
        """A heartbeat submitted: watched until taken."""
        self._deadlines.append((monotonic_ns() + self.deadline_ns, pending))
        self._waiting.add(pending)
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def taken(self, pending: Pending) -> None:
        """The writer begins deciding it (any request: a heartbeat not watched is ignored)."""
        self._waiting.discard(pending)

    async def run(self, time_out: Callable[[Pending, int], Awaitable[None]]) -> None:
        """Forever: each watched heartbeat still waiting at its deadline goes to `time_out`."""
        deadlines, waiting = self._deadlines, self._waiting
        while True:
            while deadlines and deadlines[0][1] not in waiting:
                deadlines.popleft()  # taken by the writer in time
            if not deadlines:
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            deadline, pending = deadlines[0]
            now = monotonic_ns()
            if now < deadline:
                await trio.sleep((deadline - now) / 1e9)
                continue
            deadlines.popleft()
            waiting.discard(pending)
            self.timed_out += 1
            await time_out(pending, now)
            self._warn()

    def _warn(self) -> None:
        at = trio.current_time()
        if self._logged_at is None or at - self._logged_at >= LOG_EVERY_S:
            self._logged_at = at
            log.warning(
                "the controller is overloaded: a broker heartbeat waited %.0f ms undecided and was answered "
                "REQUEST_TIMED_OUT, its session kept (%d so far)",
                self.deadline_ns / 1e6,
                self.timed_out,
            )
