"""The cyclic garbage collector's policy: when CPython's collector may scan the controller's state.

The state is millions of long-lived objects (a registration per partition) that form no cycles:
the collector never finds garbage among them, and a full pass over them holds the event loop
(at 1,000,000 partitions, 1.0-1.5 s per pass). Cycles die young (tasks, exceptions).

Rules:
- Start-up runs with the collector off (it finds nothing, and its passes were a quarter of the
  time); once the state is loaded, `settle_after_start` runs one full pass, freezes the survivors
  (`gc.freeze`: never scanned again) and keeps the young generations small, so that each young
  pass scans a few thousand objects (a millisecond or two) even while a large operation allocates
  hundreds of thousands that survive (larger thresholds made single passes of 50,000 and
  1,000,000 objects stall the loop for 10-60 ms and ~360 ms).
- While long work runs (`with long_work:` the writer's decisions, a group at a time; paced
  work once it has yielded, `slices.run_paced`), full passes wait: such work allocates hundreds
  of thousands of objects that outlive it (new registrations, control orders) and frees no
  cycle, so each full pass it provokes rescans them all (a controlled shutdown moving 300,000
  ISR entries provoked five, 1.0-1.5 s each, most of its time, every heartbeat waiting). Young
  passes go on. When no long work is left, full passes resume as CPython schedules them.
- A wait lasts at most `MAX_DEFERRAL_S` of continuous long work (`still_long`, between slices);
  then full passes resume until no long work runs: a peer that keeps the controller busy cannot
  hold back the collection of old cycles for ever.
- Process-wide: overlapping long work (the writer's decision, the full state being built) shares
  one deferral (a depth count).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator

#: the young generations' thresholds: a young pass scans about this many objects
YOUNG_THRESHOLDS = (5_000, 5)
#: young passes of the older young generation between two full passes (CPython's own rule also
#: waits until a quarter more objects than the last full pass left have survived)
FULL_EVERY = 10
#: gen 2's threshold while full passes wait: never reached
DEFERRED = 1 << 30
#: the longest continuous wait of full passes
MAX_DEFERRAL_S = 30.0


class _LongWork:
    """`with long_work:` full passes wait while the block runs (see the module's rules); nested or
    overlapping blocks share the wait. A class, not a generator: the writer enters it per group."""

    def __init__(self) -> None:
        self.depth = 0  # blocks running
        self.since = 0.0  # when the current wait began
        self.held: int | None = None  # gen 2's threshold while full passes wait, else None

    def __enter__(self) -> None:
        if self.depth == 0:
            young_0, young_1, full = gc.get_threshold()
            self.held, self.since = full, time.monotonic()
            gc.set_threshold(young_0, young_1, DEFERRED)
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.resume()

    def resume(self) -> None:
        if self.held is not None:
            young_0, young_1, _ = gc.get_threshold()
            gc.set_threshold(young_0, young_1, self.held)
            self.held = None


long_work = _LongWork()


@contextlib.contextmanager
def off() -> Iterator[None]:
    """No pass at all while this runs (start-up: millions of objects built, no garbage; the
    collector's passes over them were a quarter of its time, 200,000 partitions: 3.7 s of 4.6-5.2 s)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def settle_after_start() -> None:
    """The state is loaded: one full pass, the survivors frozen, young generations kept small."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*YOUNG_THRESHOLDS, FULL_EVERY)


def still_long() -> None:
    """Between two slices of long work: full passes resume once they waited `MAX_DEFERRAL_S`."""
    if long_work.held is not None and time.monotonic() - long_work.since > MAX_DEFERRAL_S:
        long_work.resume()


def deferring() -> bool:
    """Whether full passes wait now."""
    return long_work.held is not None
