"""A copy of the daemon whose metadata log is never fsync'd: `python -m tests.stress.no_fsync_daemon ARGS`.

It takes the daemon's arguments and runs `controller.__main__.main()` after replacing `os.fsync`
and `os.fdatasync` with versions that do nothing for a segment of the metadata log
(`__cluster_metadata-0/*.log`, found through /proc/self/fd) and fsync everything else
(directories, snapshots, meta.properties) as before, wherever the daemon calls them from.
SIGKILL cannot tell this copy from the real daemon (the page cache survives the process);
fsync_order.py must, and its suite test proves it does.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any

_SEGMENT = re.compile(r"/__cluster_metadata-0/\d+\.log$")


def _skipping_segments(sync: Callable[[Any], None]) -> Callable[[Any], None]:
    def sync_unless_segment(fd: Any) -> None:  # an int, or an object with fileno(), as os.fsync takes
        number = fd if isinstance(fd, int) else fd.fileno()
        try:
            target = os.readlink(f"/proc/self/fd/{number}")
        except OSError:
            target = ""
        if not _SEGMENT.search(target):
            sync(fd)

    return sync_unless_segment


def main() -> int:
    os.fsync = _skipping_segments(os.fsync)  # type: ignore[assignment]
    os.fdatasync = _skipping_segments(os.fdatasync)  # type: ignore[assignment]
    from controller.__main__ import main as daemon_main

    return daemon_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
