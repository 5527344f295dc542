"""Long work in slices: generators that yield wherever their caller may let other work run.

The controller's core and log are synchronous, and the daemon runs them on its event loop.
Work whose size a peer controls (a 10,000-partition topic, a broker hosting 100,000 replicas,
a large snapshot) is written as a generator: it yields at natural boundaries (a batch decided,
a few hundred records replayed or encoded) and returns its result. The shell resumes it after
letting other tasks run; a test or a tool simply `finish`es it.

Rules:
- A yield is only an opportunity: the work must be correct whether or not anything runs in
  between, and nothing else may mutate the state it works on meanwhile (the daemon has one writer).
- A yield is None, or `COMMIT_POINT`: the work reached a point where what it did so far should
  be committed before it goes on (the engine yields it at a batch boundary once many records
  are staged), so that memory stays bounded whatever the work's size.
- `paced` turns fine-grained yields into a yield once at least `SLICE_SECONDS` of work ran since
  the last one, so that small work never yields at all and large work yields about once per
  `SLICE_SECONDS` of its running time; it always passes a `COMMIT_POINT` on.
- `run_paced` runs it on the event loop: a checkpoint between slices (other tasks run), a
  commit where it yields `COMMIT_POINT`, and abandoned (`NotLeading`) once it may never commit.
  Work that pauses is long work: the cyclic collector's full passes wait until it ends
  (`controller.collector`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Generator
from typing import Generic, TypeAlias, TypeVar

import trio

from . import collector
from .runtime import monotonic_ns

T = TypeVar("T")

#: Work that may pause: yields None (or `COMMIT_POINT`) where the caller may run other work,
#: returns a T.
Slices: TypeAlias = Generator[bool | None, None, T]
#: Yielded where the caller should commit what the work staged so far.
COMMIT_POINT = True


class Done(Generic[T]):
    """Work that was small enough to finish at once: its result, no generator to drive (the
    daemon's hot path returns this, so a small request costs no generator machinery)."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


#: What starting some work returns: `Done` if it already finished, else the rest as `Slices`.
Work: TypeAlias = "Slices[T] | Done[T]"

#: The longest paced work runs before it yields (the event loop's other tasks wait this long).
SLICE_SECONDS = 0.005


def finish(work: Work[T]) -> T:
    """Run `work` to its end without pausing; its result."""
    if isinstance(work, Done):
        return work.value
    while True:
        try:
            next(work)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def paced(work: Slices[T], slice_seconds: float = SLICE_SECONDS) -> Slices[T]:
    """`work`, yielding only once at least `slice_seconds` passed since it started or last yielded
    (or at a `COMMIT_POINT`), on the runtime's monotonic clock: a simulation's does not move while
    the work computes, so there it yields at the commit points alone, the same way on any machine."""
    slice_ns = int(slice_seconds * 1e9)
    deadline = monotonic_ns() + slice_ns
    while True:
        try:
            signal = next(work)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if signal is COMMIT_POINT or monotonic_ns() >= deadline:
            yield signal
            deadline = monotonic_ns() + slice_ns


class NotLeading(Exception):
    """Work that will never be committed: this node lost its leadership first."""


async def run_paced(
    work: Work[T],
    at_commit_point: Callable[[], Awaitable[None]] | None = None,
    valid: Callable[[], bool] | None = None,
) -> T:
    """Run paced work to its end, letting other tasks run between its slices (and awaiting
    `at_commit_point` where it yields `COMMIT_POINT`). With `valid`, the work is abandoned
    (closed, `NotLeading`) at the first slice where `valid()` no longer holds."""
    if isinstance(work, Done):
        return work.value
    paused = False
    with contextlib.ExitStack() as stack:
        while True:
            if valid is not None and not valid():
                work.close()
                raise NotLeading
            try:
                signal = next(work)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            if paused:
                collector.still_long()
            else:  # it paused: long work (the collector's full passes wait until it ends)
                stack.enter_context(collector.long_work)
                paused = True
            if signal is COMMIT_POINT and at_commit_point is not None:
                await at_commit_point()
            await trio.sleep(0)
