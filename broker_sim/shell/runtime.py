"""What the fleet's shell runs on: the operating system's network and wall clock, or a simulation's.

Rules:
- Every connection a broker opens (to a controller) and every listener it binds (for the
  controller's LeaderAndIsr) goes through the runtime's network; journal entries and captures
  are stamped with its wall clock. Timers are trio's clock, which a simulation replaces.
- The runtime is a context variable: a simulation sets it around the fleet (its tasks inherit
  it). Outside any, the operating system's.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import trio


class Runtime(Protocol):
    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream: ...

    async def open_tcp_listeners(self, port: int, host: str) -> Sequence[trio.abc.Listener[Any]]: ...

    def wall_ns(self) -> int: ...


class OperatingSystem:
    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream:
        return await trio.open_tcp_stream(host, port)

    async def open_tcp_listeners(self, port: int, host: str) -> Sequence[trio.abc.Listener[Any]]:
        return await trio.open_tcp_listeners(port, host=host)

    def wall_ns(self) -> int:
        return time.time_ns()


_OPERATING_SYSTEM = OperatingSystem()
_CURRENT: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("fleet_runtime", default=None)


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


def wall_ns() -> int:
    return current().wall_ns()
