"""A seed whose simulated clock stops for good: a task that never yields, named as a violation.

Rules:
- Under the simulator's clock (trio's `MockClock`, jumping to the next deadline once every task
  waits) time moves only while tasks yield. A task that loops without yielding (a controller
  decision or a fleet step that never ends) stops the clock and the whole cluster with it: on a
  real machine that controller would stop answering, and the checker's liveness rules would name
  it; here no rule runs again, and the run would hang until something outside kills it.
- `stall_watch` reads the simulated clock every `STALL_CHECK_S` real seconds (SIGALRM, handled on
  the main thread between two bytecodes of whatever runs, the looping task included); once a
  reading equals the one before, the clock stood still at least that long and `on_stall` is
  called with the simulated time. A clean seed takes 1-3 real seconds, a slow one under 20, so
  the watch never fires during one (reading the clock changes nothing the run decides).
- Only where nothing else uses SIGALRM: the simulator's command line, around each seed in its
  forked child.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType

import trio

#: real seconds between two readings of the simulated clock
STALL_CHECK_S = 20.0


@contextlib.contextmanager
def stall_watch(on_stall: Callable[[float], None], every_s: float = STALL_CHECK_S) -> Iterator[None]:
    """While inside, `on_stall(simulated seconds)` once the simulated clock has stood still for
    `every_s` real seconds or more (see the module rules)."""
    last: list[float] = []

    def check(signum: int, frame: FrameType | None) -> None:
        try:
            now = trio.current_time()
        except RuntimeError:  # between runs: nothing to read
            return
        if last and last[0] == now:
            on_stall(now)
        last[:] = [now]

    previous = signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, every_s, every_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
