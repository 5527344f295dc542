"""Real snapshot failures, in a process of its own: `python -m tests.controller.log.failing_snapshots DIR`.

Lowering RLIMIT_FSIZE (a write past it fails with EFBIG, as a full disk fails with ENOSPC) and
RLIMIT_NOFILE (the EMFILE that idle connections caused) changes limits for the whole process,
so the test runs this in a subprocess. It prints one JSON object: what the log looked like
before each failure and after it, the error, and whether appends and snapshots still work.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from controller.log import MetadataLog, SnapshotWriteError
from tests.controller.log.helpers import build_log, partition_dir, topic

SEGMENT_BYTES = 2048  # segments stay far below the file size limit, so appends are not hit by it
FILE_SIZE_LIMIT = 32768
BIG_STATE = [topic(f"topic-{i}") for i in range(2000)]  # about 75 KiB as a snapshot


def observe(log: MetadataLog) -> dict[str, object]:
    files = sorted((path.name, path.stat().st_size) for path in partition_dir(log.data_dir).iterdir())
    return {
        "files": files,
        "snapshots": [str(snapshot_id) for snapshot_id in log.snapshots()],
        "bytes_since_snapshot": log.bytes_since_snapshot,
        "total_bytes": log.total_bytes,
        "next_offset": log.next_offset,
    }


@contextmanager
def limit(which: int, soft: int) -> Iterator[None]:
    old_soft, hard = resource.getrlimit(which)
    resource.setrlimit(which, (soft, hard))
    try:
        yield
    finally:
        resource.setrlimit(which, (old_soft, hard))


def fail_snapshot(log: MetadataLog, failing: AbstractContextManager[object]) -> dict[str, object]:
    """Observe the log, write a snapshot under `failing`, observe the log again."""
    before = observe(log)
    with failing:
        try:
            log.write_snapshot(log.next_offset, 1, BIG_STATE, 0)
        except SnapshotWriteError as exc:
            cause = exc.__cause__
            errno_name = errno.errorcode[cause.errno] if isinstance(cause, OSError) and cause.errno else None
            error = {"type": type(exc).__name__, "message": str(exc), "errno": errno_name}
        else:
            error = {"type": None, "message": "the snapshot was written", "errno": None}
    return {"before": before, "error": error, "after": observe(log)}


@contextmanager
def descriptors_exhausted() -> Iterator[None]:
    """Every descriptor the (lowered) limit allows is open, as with too many idle connections."""
    held = []
    with limit(resource.RLIMIT_NOFILE, 64):
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        try:
            yield
        finally:
            for fd in held:
                os.close(fd)


def main(data_dir: Path) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
    log = build_log(data_dir, [[topic(str(i))] for i in range(40)], segment_bytes=SEGMENT_BYTES)
    log.write_snapshot(20, 1, [topic("small")], 0)
    result: dict[str, object] = {}
    result["file_too_large"] = fail_snapshot(log, limit(resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT))
    with limit(resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT):
        result["appended_under_the_file_size_limit"] = log.append([[topic("after-efbig")]], 1, 0)
    result["descriptors_exhausted"] = fail_snapshot(log, descriptors_exhausted())
    result["appended_after"] = log.append([[topic("after-emfile")]], 1, 0)
    result["snapshot_after"] = log.write_snapshot(log.next_offset, 1, BIG_STATE, 0).name
    result["final"] = observe(log)
    log.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
