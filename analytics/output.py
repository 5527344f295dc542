"""The output directory: built whole beside its final place, then put there by renames.

Purpose: a run that fails, or is killed, never leaves a half-written output where a good one
was. `staged_output(out)` yields a fresh temporary sibling of `out`; when the block finishes,
an existing `out` is moved aside, the new one renamed into place, and the old one deleted.

Rules:
- The temporary sibling is `.<name>.tmp-<pid>-<ns>` in the same directory as `out` (so the rename
  stays on one filesystem); the old output goes to `.<name>.old-<pid>-<ns>` until the new one is
  in place. Both start with `.`, so readers that skip hidden names never see them.
- On failure the temporary sibling is deleted and `out` is left exactly as it was.
- `out` that exists and is not a directory is refused before anything runs (`OutputError`), as
  is one Spark cannot read back by its name (paths.py: a `:` with a glob character).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .paths import path_problem


class OutputError(Exception):
    """An output path the job cannot use; the message is the one line the user sees."""


def check_output(out: Path) -> Path:
    """`out`, absolute; `OutputError` if it is a file, its parent cannot hold it or Spark cannot read it."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise OutputError(f"output {out}: exists and is not a directory")
    problem = path_problem(out)
    if problem:
        raise OutputError(f"output {out}: {problem}")
    parent = out.parent
    if parent.exists() and not parent.is_dir():
        raise OutputError(f"output {out}: {parent} is not a directory")
    if parent.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"output {out}: cannot write in {parent}")
    return out


@contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """Yield an empty temporary directory that replaces `out` when the block succeeds."""
    out = check_output(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{time.time_ns()}"
    staging = out.parent / f".{out.name}.tmp-{tag}"
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    previous = out.parent / f".{out.name}.old-{tag}"
    if out.exists():
        out.rename(previous)
    try:
        staging.rename(out)
    except BaseException:
        if previous.exists():
            previous.rename(out)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(previous, ignore_errors=True)
