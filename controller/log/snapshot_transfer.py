"""A snapshot received from the leader in chunks (FetchSnapshot), written as the snapshot writer
writes its own: Kafka's `FileRawSnapshotWriter` behind `createNewSnapshotUnchecked`.

Rules:
- Chunks go to `<name>.part` in order: each must start where the file ends (Kafka's client
  checks the response's position against the writer's size), else `ValueError`.
- `complete()` fsyncs the `.part`, checks it as a snapshot (`check_snapshot_file`: every batch's
  framing and CRC, header, footer; the records are decoded when it is loaded, as in Kafka),
  renames it to its name and fsyncs the directory: a received snapshot exists completely and
  whole, or not at all. An invalid one is a `SnapshotError`
  and is deleted; it was never registered.
- An OSError on the way is a `SnapshotWriteError` and removes the `.part`, as does `abort()`;
  a `.part` left by a crash is deleted at the next open.
- The caller registers the completed file (`MetadataLog` adds it to its catalog), then calls
  `truncate_to_latest_snapshot`, as Kafka's follower does once the last chunk is in.
- One thread at a time uses an `IncomingSnapshot`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from .. import runtime
from .model import SnapshotId, SnapshotWriteError
from .segments import fsync_directory
from .snapshots import SnapshotError, check_snapshot_file, snapshot_name

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


class IncomingSnapshot:
    """The `.part` file of a snapshot being received; `complete()` makes it a snapshot."""

    def __init__(
        self,
        directory: Path,
        snapshot_id: SnapshotId,
        *,
        fsync: bool,
        on_complete: Callable[[SnapshotId, Path, int], None],
    ) -> None:
        self.snapshot_id = snapshot_id
        self.path = directory / snapshot_name(snapshot_id)
        self._part = directory / (self.path.name + ".part")
        self._fsync = fsync
        self._on_complete = on_complete
        self.size = 0
        try:
            self._fd: int | None = os.open(self._part, _CREATE_FLAGS, 0o644)
        except OSError as exc:
            raise SnapshotWriteError(f"cannot create {self._part}: {exc}") from exc

    def append(self, position: int, data: bytes) -> None:
        """Write the chunk that starts at byte `position` of the snapshot (the bytes received so far)."""
        fd = self._open_fd()
        if position != self.size:
            raise ValueError(f"a chunk of {self.path.name} at byte {position}, but {self.size} bytes are in")
        try:
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, memoryview(data)[written:])
        except OSError as exc:
            self._fail(exc)
        self.size += len(data)

    def complete(self) -> Path:
        """Make the received bytes the snapshot (see the module's rules); return its path."""
        fd = self._open_fd()
        try:
            if self._fsync:
                runtime.fsync(fd)
            os.close(fd)
            self._fd = None
            check_snapshot_file(self._part)
            runtime.replace(self._part, self.path)
        except SnapshotError:
            self.abort()
            raise
        except OSError as exc:
            self._fail(exc)
        try:
            if self._fsync:
                fsync_directory(self.path.parent)
        except OSError as exc:
            _remove_quietly(self.path)
            raise SnapshotWriteError(f"cannot make {self.path} durable: {exc}") from exc
        self._on_complete(self.snapshot_id, self.path, self.size)
        return self.path

    def abort(self) -> None:
        """Give the snapshot up: close and delete the `.part` (idempotent)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        _remove_quietly(self._part)

    def _open_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"the transfer of {self.path.name} is over")
        return self._fd

    def _fail(self, exc: OSError) -> NoReturn:
        self.abort()
        raise SnapshotWriteError(f"cannot write {self._part}: {exc}") from exc


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):  # the error to report is the one that got here; open() deletes a .part
        path.unlink(missing_ok=True)
