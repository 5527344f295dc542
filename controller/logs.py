"""Logging for the daemon: text or JSON lines on stderr (stdout carries only `listening on ...`)."""

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


class RateLimitedLogger:
    """At most one message per key and interval; the next one says how many were suppressed."""

    def __init__(self, logger: logging.Logger, interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.interval_s = interval_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def log(self, level: int, key: str, msg: str, *args: object) -> bool:
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return False
        self._last[key] = now
        suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            msg += f" ({suppressed} more like this suppressed)"
        self.logger.log(level, msg, *args)
        return True
