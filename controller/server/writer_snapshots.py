"""The active controller's snapshots, taken on the writer's task (`controller.server.writer`'s
rules, "Snapshots"): a part of `Writer` kept apart, as the engine keeps its snapshots in
`engine_snapshots`.

Rules:
- A snapshot is due once `snapshot_bytes` of log were appended since the last one; it waits for
  the commits in flight to land and holds committed records only, so it is taken when the
  quorum's high watermark has reached the log's end.
- The state is frozen on the writer's task (milliseconds); a task of its own encodes the
  snapshot in slices and writes it from a worker thread while the writer goes on deciding.
- A failed snapshot (an OSError: `SnapshotWriteError`) leaves the log as it was: logged, counted,
  retried after `SNAPSHOT_RETRY_S`, doubling up to `SNAPSHOT_RETRY_MAX_S`. A `LogError` (the log
  itself failed) escapes, as fatal as a failed commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import trio

from ..engine import ControllerEngine
from ..engine_snapshots import EncodedSnapshot
from ..log import LogError
from ..runtime import in_thread
from ..slices import Slices, run_paced
from .durability import Durability

log = logging.getLogger("fencer.writer")

#: The first retry delay after a failed snapshot; it doubles up to `SNAPSHOT_RETRY_MAX_S`.
SNAPSHOT_RETRY_S = 5.0
SNAPSHOT_RETRY_MAX_S = 300.0


class SnapshotMetrics(Protocol):
    def snapshot(self, ok: bool, seconds: float) -> None: ...


class WriterSnapshots:
    """What `Writer` does about snapshots (it supplies the attributes declared here)."""

    engine: ControllerEngine
    durability: Durability
    _metrics: SnapshotMetrics
    _clock: Callable[[], float]  # monotonic seconds, for the retry delay
    _nursery: trio.Nursery | None

    async def quiesce(self) -> None: ...

    def _init_snapshots(self) -> None:
        self._snapshotting = False
        self._snapshot_retry_s = SNAPSHOT_RETRY_S
        self._snapshot_not_before = 0.0

    @property
    def snapshotting(self) -> bool:
        return self._snapshotting

    async def _maybe_snapshot(self) -> None:
        engine = self.engine
        if self._snapshotting or not engine.snapshot_wanted:
            return
        if self._clock() < self._snapshot_not_before:
            return
        await self.quiesce()  # the state must equal the log: let the commits in flight land
        committed = self.durability.high_watermark
        if not engine.active or (committed is not None and committed < engine.log.next_offset):
            return  # a snapshot holds committed records only: later
        work = engine.snapshot()  # the state is frozen now
        self._snapshotting = True
        assert self._nursery is not None
        self._nursery.start_soon(self._snapshot, work)

    async def _snapshot(self, work: Slices[EncodedSnapshot]) -> None:
        started = self._clock()
        try:
            encoded = await run_paced(work)  # CPU: here, in slices
            path = await in_thread(self.engine.write_snapshot, encoded)  # I/O: in a thread
        except LogError:
            raise  # the log itself failed: as fatal as a failed commit
        except Exception as exc:  # SnapshotWriteError and the like: the log is intact, retry later
            self._snapshot_not_before = self._clock() + self._snapshot_retry_s
            log.error("snapshot failed (%s); the log is intact, retrying in %.0f s", exc, self._snapshot_retry_s)
            self._snapshot_retry_s = min(self._snapshot_retry_s * 2, SNAPSHOT_RETRY_MAX_S)
            self._metrics.snapshot(False, self._clock() - started)
        else:
            self._snapshot_retry_s = SNAPSHOT_RETRY_S
            log.info("wrote snapshot %s", path)
            self.durability.snapshot_created(encoded.end_offset, encoded.epoch)
            self._metrics.snapshot(True, self._clock() - started)
        finally:
            self._snapshotting = False
