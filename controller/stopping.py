"""Stopping on a signal before the daemon's own handler is in place, and finding a failure inside
trio's exception groups. Imports nothing heavy: `controller/__main__.py` installs the handler
before it imports the daemon (see its rules).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar


class StopRequested(BaseException):
    """SIGTERM or SIGINT arrived before the daemon's own handler took over (see the module rules)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop_requested(signum: int, frame: FrameType | None) -> None:
    raise StopRequested(signum)


@contextmanager
def stopping_on_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise `StopRequested` until the daemon's receiver takes over (it restores
    this handler when it leaves, and then ignores both); outside the main thread, nothing changes."""
    try:
        previous = {signum: signal.signal(signum, _stop_requested) for signum in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if signal.getsignal(signum) is _stop_requested:  # not what the daemon set on its way out
                signal.signal(signum, handler)


Failure = TypeVar("Failure", bound=BaseException)


def find_failure(exc: BaseException, kind: type[Failure]) -> Failure | None:
    """The `kind` of failure behind `exc` (itself, or inside nested exception groups), if any."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_failure(inner, kind)
            if found is not None:
                return found
    return None
