"""A node's disk in the simulation: what its fsyncs made durable, and what a crash of its machine keeps.

Rules:
- What is durable is kept per file, by name: the file's size at its last fsync; a rename (the
  daemon renames through `controller.runtime.replace`) carries it to the new name. Names, not
  inodes: the operating system reuses a deleted file's inode as other processes allow, and a
  seed must run the same way anywhere. Every file a node finds when it starts is durable as it
  is: it survived whatever came before.
- A node's kill is a crash of its process (the operating system's page cache keeps every write) or,
  as the seed draws, of its machine (`power_loss`): each file is cut back to its durable size, or
  torn (a random prefix of its unsynced bytes kept); a file never fsync'd is lost whole, or torn
  from nothing. A daemon that acknowledges only what it fsync'd loses nothing acknowledged; one that
  answers, or counts a follower's fetch, before the fsync is caught by the fleet's final check.
- Simplifications, each the more forgiving of what a real crash allows: a directory's entries
  (creations, renames, removals) are durable at once; a truncation stays; bytes rewritten in place
  below the durable size stay; a file made again under a name that was durable (a deleted one's)
  inherits its durable size.
- A failing disk (`failing`: EIO or ENOSPC, as fsync(2) returns them) fails every fsync until it
  is replaced; what was written stays in the page cache, not durable.
- The files are real (the node's data dir in the seed's directory) and nothing calls the operating
  system's fsync: a power loss is applied to the files themselves, after the node's tasks have ended.
"""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path


class SimDisk:
    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root.resolve()  # as the names of the node's open files read (/proc/self/fd)
        self.rng = rng
        self._durable: dict[str, int] = {}
        #: the errno every fsync fails with, while the disk fails (None: it works)
        self.failing: int | None = None

    def mounted(self) -> None:
        """The node starts: every file there is durable as it is."""
        self._durable = {str(found): found.stat().st_size for found in self._files()}

    def fsync(self, fd: int) -> None:
        if self.failing is not None:
            raise OSError(self.failing, os.strerror(self.failing))
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            name = os.readlink(f"/proc/self/fd/{fd}")
            if not name.endswith(" (deleted)"):
                self._durable[name] = info.st_size

    def replaced(self, source: Path, target: Path) -> None:
        """`source` was renamed to `target`: what was durable of it is, under its new name."""
        durable = self._durable.pop(str(source.resolve()), None)
        self._durable.pop(target_name := str(target.resolve()), None)
        if durable is not None:
            self._durable[target_name] = durable

    def power_loss(self) -> list[str]:
        """The node's machine crashed: every file as the rules say; what was lost, one line a file."""
        lost = []
        for path in self._files():
            info = path.stat()
            durable = self._durable.get(str(path))
            if durable is not None and info.st_size <= durable:
                continue
            kept_from = durable or 0
            torn = self.rng.random() < 0.5
            keep = self.rng.randint(kept_from, info.st_size) if torn else kept_from
            name = path.relative_to(self.root)
            if durable is None and not torn:
                path.unlink()
                lost.append(f"{name}: never fsync'd, gone ({info.st_size} bytes)")
                continue
            os.truncate(path, keep)
            how = "torn" if torn else "cut"
            lost.append(f"{name}: {how} to {keep} of {info.st_size} bytes ({kept_from} fsync'd)")
        return lost

    def _files(self) -> list[Path]:
        return sorted(path for path in self.root.rglob("*") if path.is_file())  # under the resolved root
