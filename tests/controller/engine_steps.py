"""The group-commit writer's steps on an engine, run synchronously (for tests of the engine itself).

`commit` is what `controller.server.writer.Writer` does for one group, without the event loop
(and with a single voter: the local fsync commits): take what was decided, encode it, write and
fsync it; then, as the writer does once the state is settled, take a snapshot if one is wanted.
`snapshot` is the writer's snapshot steps.
"""

from __future__ import annotations

from pathlib import Path

from controller.engine import ControllerEngine
from controller.slices import finish


def commit(engine: ControllerEngine) -> int:
    """Make everything staged durable (one write, one fsync); snapshot if wanted; the records written."""
    work = engine.commit()
    records = 0 if work is None else engine.write(finish(work))
    if engine.snapshot_wanted and engine.settled:
        snapshot(engine)
    return records


def snapshot(engine: ControllerEngine) -> Path:
    """Freeze the settled state, encode it, write it as a snapshot, apply retention."""
    return engine.write_snapshot(finish(engine.snapshot()))
