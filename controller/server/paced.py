"""Long work on the event loop without holding it: paced work (`controller.slices`) run slice by
slice, and a worker thread that starts at once."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

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


async def in_thread_now(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a worker thread that starts at once; its result or exception comes back here.

    Unlike `trio.to_thread.run_sync` there is no capacity limiter, whose checkpoint would send
    this task to the back of the run queue (behind a whole group's decisions) before the thread
    even starts. The wait cannot be cancelled: a started write or fsync must finish."""
    token = trio.lowlevel.current_trio_token()
    task = trio.lowlevel.current_task()

    def deliver(result: Any) -> None:  # an outcome.Outcome, which trio's reschedule unwraps
        token.run_sync_soon(trio.lowlevel.reschedule, task, result)

    trio.lowlevel.start_thread_soon(functools.partial(fn, *args), deliver)
    return await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)  # type: ignore[no-any-return]
