"""Long work on the event loop without holding it: paced work (`controller.slices`) run slice by
slice (a worker thread that starts at once: `controller.runtime.in_thread_now`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from ..slices import COMMIT_POINT, Done, Work

T = TypeVar("T")


class NotLeading(Exception):
    """Work that will never be committed: this node lost its leadership first."""


async def run_paced(
    work: Work[T],
    at_commit_point: Callable[[], Awaitable[None]] | None = None,
    valid: Callable[[], bool] | None = None,
) -> T:
    """Run paced work (`controller.slices`) to its end, letting other tasks run between its
    slices (and awaiting `at_commit_point` where it yields `COMMIT_POINT`). With `valid`, the work
    is abandoned (closed, `NotLeading`) at the first slice where `valid()` no longer holds."""
    if isinstance(work, Done):
        return work.value
    while True:
        if valid is not None and not valid():
            work.close()
            raise NotLeading
        try:
            signal = next(work)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if signal is COMMIT_POINT and at_commit_point is not None:
            await at_commit_point()
        await trio.sleep(0)
