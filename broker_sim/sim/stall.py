"""A seed whose simulated clock stops for good, named as a violation instead of a hang.

Rules:
- Under the simulator's clock (trio's `MockClock`, jumping to the next deadline once every task
  waits) time moves only while tasks yield. A task that loops without yielding, or a computation
  that does not end (a controller decision gone wrong: an endless loop, an exponent of billions),
  stops the clock and the whole cluster with it: on a real machine that controller would stop
  answering and the checker's liveness rules would name it; here nothing runs again, and the run
  would hang until something outside killed it.
- The seed's child publishes the simulated time it has reached (`Progress`, eight bytes of memory
  shared with its parent, written by a trio instrument at every turn of the scheduler: no effect
  on what the run decides). The parent waits for the child watching it (`wait_watching`): once
  the published time has not moved for `STALL_AFTER_S` real seconds, it kills the child and the
  seed fails as `[sim-stall]`. A clean seed takes 1-3 real seconds, a slow one under 20; from
  outside the child, a computation that holds the interpreter (a C-level loop) is caught too.
"""

from __future__ import annotations

import mmap
import os
import select
import signal
import struct
import time

import trio

#: real seconds the simulated clock may stand still before the seed is a stall
STALL_AFTER_S = 20.0
#: real seconds between two readings of a child's progress (at most)
_POLL_S = 0.5
_TIME = struct.Struct("d")


class Progress:
    """The simulated time a seed's child has reached, in memory shared across `os.fork`."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, _TIME.size)
        self.publish(-1.0)

    def publish(self, simulated_s: float) -> None:
        _TIME.pack_into(self._memory, 0, simulated_s)

    def read(self) -> float:
        value: float = _TIME.unpack_from(self._memory, 0)[0]
        return value


class Publisher(trio.abc.Instrument):
    """Publishes the run's simulated time at every turn of the scheduler."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def before_io_wait(self, timeout: float) -> None:
        self.progress.publish(trio.current_time())


def wait_watching(child: int, progress: Progress, stall_after_s: float = STALL_AFTER_S) -> tuple[int, float | None]:
    """Wait for `child` to end: (its exit code, None); or, once the simulated time it publishes has
    stood still for `stall_after_s` real seconds, kill it: (-SIGKILL, the simulated time it
    stood at). Woken at once when the child ends (a pidfd), else to read its progress."""
    poll_s = min(_POLL_S, stall_after_s / 4)
    last, since = progress.read(), time.monotonic()
    pidfd = os.pidfd_open(child)
    try:
        while True:
            select.select([pidfd], [], [], poll_s)
            pid, status = os.waitpid(child, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status), None
            now = progress.read()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= stall_after_s:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
                return -signal.SIGKILL, max(last, 0.0)
    finally:
        os.close(pidfd)
