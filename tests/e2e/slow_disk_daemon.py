"""The daemon on a disk that turns slow on demand: `python -m tests.e2e.slow_disk_daemon ARGS`.

It runs `controller.__main__.main()` with the daemon's arguments after wrapping `os.fsync`: while
the file named by `$FENCER_SLOW_DISK` exists, every fsync of a file whose path matches
`$FENCER_SLOW_DISK_MATCH` (a regular expression; default: log segments and snapshot parts)
first sleeps `$FENCER_SLOW_DISK_SECONDS` (default 2), then fsyncs for real. Shutdown tests use
it to hold a commit or a snapshot in the middle of its fsync when SIGTERM arrives: the
daemon must wait for it, never close the log under it.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

DEFAULT_MATCH = r"/__cluster_metadata-0/(\d+\.log|.*\.checkpoint\.part)$"


def slowed(sync: Callable[[Any], None], marker: str, match: re.Pattern[str], seconds: float) -> Callable[[Any], None]:
    def slow_sync(fd: Any) -> None:  # an int, or an object with fileno(), as os.fsync takes
        if os.path.exists(marker):
            number = fd if isinstance(fd, int) else fd.fileno()
            try:
                target = os.readlink(f"/proc/self/fd/{number}")
            except OSError:
                target = ""
            if match.search(target):
                time.sleep(seconds)
        sync(fd)

    return slow_sync


def main() -> int:
    marker = os.environ["FENCER_SLOW_DISK"]
    match = re.compile(os.environ.get("FENCER_SLOW_DISK_MATCH", DEFAULT_MATCH))
    seconds = float(os.environ.get("FENCER_SLOW_DISK_SECONDS", "2"))
    os.fsync = slowed(os.fsync, marker, match, seconds)  # type: ignore[assignment]
    from controller.__main__ import main as daemon_main

    return daemon_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
