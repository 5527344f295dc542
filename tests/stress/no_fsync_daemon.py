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

_SEGMENT = re.compile(r"/__cluster_metadata-0/\d+\.log$")


def _skipping_segments(sync: Callable[[int], None]) -> Callable[[int], None]:
    def sync_unless_segment(fd: int) -> None:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if not _SEGMENT.search(target):
            sync(fd)

    return sync_unless_segment


def main() -> int:
    os.fsync = _skipping_segments(os.fsync)
    os.fdatasync = _skipping_segments(os.fdatasync)
    from controller.__main__ import main as daemon_main

    return daemon_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
