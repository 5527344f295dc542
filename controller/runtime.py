"""What the controller runs on: the operating system's network, threads and clocks, or a simulation's.

Rules:
- Every connection the controller opens (`open_tcp_stream`: another voter, a broker's listener)
  and every listener it binds (`open_tcp_listeners`) goes through the runtime's network.
- Blocking work (a write and its fsync, a truncation, a large encoding) goes through
  `run_blocking`: in a worker thread on the operating system (`now=True`: a thread that starts at
  once, without trio's capacity limiter, for the commit path: `in_thread_now`); a simulation runs
  it inline, on its one scheduler.
- Durability: every fsync of the controller's files goes through `fsync`, and every rename
  through `replace`: the operating system's, or a simulation's, which notes what is durable under
  which name (and loses the rest when its machine crashes).
- Clocks: `wall_ns` (record batches' timestamps, the capture's) and `monotonic_ns` (brokers'
  session deadlines: the one clock the writer, the session timer and activation share). Timers
  and timeouts are trio's clock, which a simulation replaces with its own.
- The runtime is a context variable: a simulation sets it for each node's tasks (a trio task
  inherits the context of the task that started it), so several nodes, each with its own clock
  and network address, run in one process. Outside any, the operating system's.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import trio

T = TypeVar("T")


class Runtime(Protocol):
    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream: ...

    async def open_tcp_listeners(self, port: int, host: str) -> Sequence[trio.abc.Listener[Any]]: ...

    async def run_blocking(self, fn: Callable[[], T], now: bool) -> T: ...

    def fsync(self, fd: int) -> None: ...

    def replace(self, source: Path, target: Path) -> None: ...

    def wall_ns(self) -> int: ...

    def monotonic_ns(self) -> int: ...


class OperatingSystem:
    """The real thing: TCP, worker threads, the system's clocks."""

    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream:
        return await trio.open_tcp_stream(host, port)

    async def open_tcp_listeners(self, port: int, host: str) -> Sequence[trio.abc.Listener[Any]]:
        return await trio.open_tcp_listeners(port, host=host)

    async def run_blocking(self, fn: Callable[[], T], now: bool) -> T:
        if not now:
            return await trio.to_thread.run_sync(fn)
        token = trio.lowlevel.current_trio_token()
        task = trio.lowlevel.current_task()

        def deliver(result: Any) -> None:  # an outcome.Outcome, which trio's reschedule unwraps
            token.run_sync_soon(trio.lowlevel.reschedule, task, result)

        trio.lowlevel.start_thread_soon(fn, deliver)
        return await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)  # type: ignore[no-any-return]

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def replace(self, source: Path, target: Path) -> None:
        os.replace(source, target)

    def wall_ns(self) -> int:
        return time.time_ns()

    def monotonic_ns(self) -> int:
        return time.monotonic_ns()


_OPERATING_SYSTEM = OperatingSystem()
_CURRENT: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("fencer_runtime", default=None)


def current() -> Runtime:
    return _CURRENT.get() or _OPERATING_SYSTEM


@contextlib.contextmanager
def use(runtime: Runtime) -> Iterator[None]:
    """Run what starts inside (tasks included) on `runtime`."""
    token = _CURRENT.set(runtime)
    try:
        yield
    finally:
        _CURRENT.reset(token)


async def in_thread_now(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a worker thread that starts at once; its result or exception comes back here.

    Unlike `trio.to_thread.run_sync` there is no capacity limiter, whose checkpoint would send
    this task to the back of the run queue (behind a whole group's decisions) before the thread
    even starts. The wait cannot be cancelled: a started write or fsync must finish."""
    return await current().run_blocking(functools.partial(fn, *args), True)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in one of trio's worker threads (`trio.to_thread.run_sync`)."""
    return await current().run_blocking(functools.partial(fn, *args), False)


def fsync(fd: int) -> None:
    """Make what was written to `fd` (a file, or a directory's entries) durable."""
    current().fsync(fd)


def replace(source: Path, target: Path) -> None:
    """Rename `source` to `target`, replacing it (`os.replace`)."""
    current().replace(source, target)


def wall_ms() -> int:
    return current().wall_ns() // 1_000_000


def wall_ns() -> int:
    return current().wall_ns()


def monotonic_ns() -> int:
    return current().monotonic_ns()


def monotonic() -> float:
    """`monotonic_ns` in seconds."""
    return current().monotonic_ns() / 1e9
