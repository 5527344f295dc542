"""The memory budget for requests across all connections (Kafka's `queued.max.request.bytes`).

Modelled on Kafka's memory pool: when a frame's size prefix arrives, the connection reserves the
frame's whole size; if it cannot, it stops reading until memory is released. Reserved frames
may complete, so the daemon never deadlocks on partial frames.

Rules:
- `try_reserve` succeeds only if the frame fits (`used + size <= capacity`) and nobody waits
  before it; `wait_reserve` then queues the connection, first come first served, so that a large
  frame is not starved by a stream of small ones. The budget grants the head of the queue as
  soon as it fits, on the waiter's behalf; a waiter cancelled after its grant gives it back.
- `force` counts memory already held whatever the budget says: the complete frames a single
  read brought in before their prefix could be checked (at most one read per connection), so
  `used` may pass `capacity` by that much and is always what is really held.
- `release` gives memory back (a request answered or dropped, a connection closed) and wakes
  the waiters that now fit.
- A frame larger than the capacity could never be read: the budget refuses to be built below
  the largest frame.
- Connections hold memory with `async with budget.reserve(size)` (waiting in line as
  `wait_reserve` does; `force=True` counts bytes already held without waiting): released when the
  block ends, however it ends; a reservation cancelled while waiting holds nothing.
"""

from __future__ import annotations

from collections import deque
from types import TracebackType

import trio


class _Waiter:
    __slots__ = ("granted", "size", "woken")

    def __init__(self, size: int) -> None:
        self.size = size
        self.granted = False
        self.woken = trio.Event()


class MemoryBudget:
    """Bytes reserved for requests: `used` of `capacity` (a number the metrics can report)."""

    def __init__(self, capacity: int, largest_frame: int = 0) -> None:
        if capacity < largest_frame:
            raise ValueError(f"a budget of {capacity} bytes cannot hold a frame of {largest_frame} bytes")
        self.capacity = capacity
        self.used = 0
        self._waiters: deque[_Waiter] = deque()

    @property
    def waiting(self) -> int:
        """Connections queued for memory."""
        return len(self._waiters)

    def try_reserve(self, size: int) -> bool:
        """Reserve `size` bytes now if they fit and nobody waits before us."""
        if self._waiters or self.used + size > self.capacity:
            return False
        self.used += size
        return True

    async def wait_reserve(self, size: int) -> None:
        """Reserve `size` bytes, waiting in line until they fit."""
        if size > self.capacity:
            raise ValueError(f"{size} bytes can never fit in a budget of {self.capacity}")
        if self.try_reserve(size):
            return
        waiter = _Waiter(size)
        self._waiters.append(waiter)
        try:
            await waiter.woken.wait()
        except BaseException:  # cancelled: leave the line, or give back what was granted meanwhile
            if waiter.granted:
                self.release(size)
            else:
                self._waiters.remove(waiter)
                self._grant()  # the head may have been us, blocking smaller ones that fit
            raise

    def reserve(self, size: int, *, force: bool = False) -> Reservation:
        """`async with budget.reserve(size):` hold `size` bytes for the block, waiting in line for
        them first (or, with `force`, counting bytes already held at once)."""
        return Reservation(self, size, force)

    def force(self, size: int) -> None:
        """Count `size` bytes already held (they were read before they could be checked)."""
        self.used += size

    def release(self, size: int) -> None:
        self.used -= size
        if self._waiters:
            self._grant()

    def _grant(self) -> None:
        waiters = self._waiters
        while waiters and self.used + waiters[0].size <= self.capacity:
            waiter = waiters.popleft()
            self.used += waiter.size
            waiter.granted = True
            waiter.woken.set()


class Reservation:
    """`size` bytes of `budget`, held from `async with` until the block ends (`granted` once held)."""

    __slots__ = ("budget", "force", "granted", "size")

    def __init__(self, budget: MemoryBudget, size: int, force: bool) -> None:
        self.budget = budget
        self.size = size
        self.force = force
        self.granted = False

    async def __aenter__(self) -> Reservation:
        budget = self.budget
        if self.force:
            budget.force(self.size)
        elif not budget.try_reserve(self.size):
            await budget.wait_reserve(self.size)  # cancelled: nothing is held (wait_reserve gives it back)
        self.granted = True
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.granted = False
        self.budget.release(self.size)
