"""Logging for the daemon: text or JSON lines on stderr (stdout carries only `listening on ...`).

`RateLimitedLogger` keeps a flood (refused frames, accept errors) from flooding the log: per key,
one message per interval, the next one saying how many were suppressed meanwhile. Keys come from
a small fixed set chosen by the code (a reason, an error name), never from what a peer sends:
one entry per key is kept for the life of the logger.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and the exception, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class _Window:
    __slots__ = ("emitted_at", "suppressed")

    def __init__(self, emitted_at: float) -> None:
        self.emitted_at = emitted_at
        self.suppressed = 0


class RateLimitedLogger:
    """At most one message per key every `interval_s`; the others are counted and suppressed."""

    def __init__(
        self, logger: logging.Logger, interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self.clock = clock
        self._windows: dict[str, _Window] = {}  # per key: the last message emitted, and what followed it

    def log(self, level: int, key: str, msg: str, *args: object) -> bool:
        """Emit `msg % args` at `level` unless a message for `key` was emitted less than
        `interval_s` ago (then only count it); True if emitted."""
        now = self.clock()
        window = self._windows.get(key)
        if window is not None and now - window.emitted_at < self.interval_s:
            window.suppressed += 1
            return False
        if window is not None and window.suppressed:
            msg += " (%d similar messages suppressed in the last %.1f s)"
            args = (*args, window.suppressed, now - window.emitted_at)
        self._windows[key] = _Window(now)
        self.logger.log(level, msg, *args)
        return True
