"""The controller engine's snapshots: when one is due, freezing and encoding the state, writing
it and applying retention (a mixin of `controller.engine.ControllerEngine`).

Rules:
- Once `snapshot_bytes` of log (default 20 MiB, as Kafka) were appended since the last snapshot
  (`snapshot_wanted`) and the state equals the log (`settled`), `snapshot` freezes the state and
  encodes it, and `write_snapshot` writes it; then retention runs as in Kafka's metadata log:
  nothing is deleted until the segments and snapshots together pass `metadata_retention_bytes`
  (default 100 MiB); then the oldest snapshots go, with the segments wholly below the oldest
  snapshot kept. The newest snapshot and the active segment always stay.
- A snapshot that cannot be written (or files retention cannot delete) is a `SnapshotWriteError`:
  the log and the engine stay usable, and `snapshot_wanted` stays true: the caller picks the retry.
- No snapshot is taken inside a metadata transaction; a standby snapshots what it replayed, only
  between transactions (as Kafka).
- A standby's state is rebuilt from the newest snapshot (`reload`: after a lost epoch, or once the
  leader's snapshot replaced the log) in two parts, so that the shell can build the new core in a
  worker thread (a million partitions take seconds) and only swap it in on the event loop:
  `fresh_core` reads and replays the snapshot into a core of its own, touching nothing of the
  engine's; `install` makes it the engine's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from protocol.records.transactions import TransactionReplay

from .control.orders import OutboundCollector
from .core import ControllerCore
from .log import LogEntry, MetadataLog
from .log.snapshots import encode_snapshot
from .ops.snapshot import snapshot_records
from .runtime import wall_ms
from .slices import Slices, finish, paced
from .startup import LoadedSnapshot, load_snapshot, replay_framing
from .state.controller_state import RecordAndVersion


class EncodedSnapshot(NamedTuple):
    end_offset: int
    epoch: int
    batches: list[bytes]


class SnapshotMethods:
    """`ControllerEngine`'s snapshots (see the module's rules)."""

    if TYPE_CHECKING:
        core: ControllerCore
        log: MetadataLog
        active: bool
        snapshot_bytes: int
        metadata_retention_bytes: int
        slice_seconds: float
        _next_offset: int
        _applied: int
        _transaction: tuple[int, str | None] | None
        _transactions: TransactionReplay[LogEntry]
        term: int
        _data_records: int
        _staged: list[Sequence[RecordAndVersion]]
        _orders: OutboundCollector
        _broken: str | None

        @property
        def controller_epoch(self) -> int: ...

    @property
    def settled(self) -> bool:
        """Is the state exactly what the log holds (nothing decided and not yet durable)?"""
        return self._next_offset == self.log.next_offset

    @property
    def snapshot_wanted(self) -> bool:
        """Were `snapshot_bytes` of log appended since the last snapshot? (Take one once settled.)"""
        return self.log.bytes_since_snapshot >= self.snapshot_bytes

    def snapshot(self) -> Slices[EncodedSnapshot]:
        """Freeze the settled state now (milliseconds), and return the work that encodes it as a
        snapshot's batches (paced, on the deciding thread, beside decisions: encoding is CPU under
        the GIL, so a worker thread would only take the event loop's turns); `write_snapshot`
        writes the result."""
        if not self.settled:
            raise RuntimeError("cannot snapshot while decided records are not yet durable")
        if self._transaction is not None:
            raise RuntimeError("cannot snapshot inside a metadata transaction")
        end, frozen, epoch = self.log.next_offset, self.core.freeze(), self.controller_epoch
        batches = encode_snapshot(epoch, snapshot_records(frozen), wall_ms())
        return paced(_encoded(end, epoch, batches), self.slice_seconds)

    def standby_snapshot(self) -> Slices[EncodedSnapshot] | None:
        """A standby's snapshot of the committed state it replayed (its end: the next offset to
        replay; its epoch: that of the batch before it), as `snapshot` for the active controller;
        None while a metadata transaction is open there (Kafka snapshots only between them)."""
        if self.active:
            raise RuntimeError("the active controller snapshots with `snapshot`")
        end = self._applied
        if self._transactions.open is not None or end <= self.log.log_start_offset:
            return None
        epoch = self.log.epoch_for_offset(end - 1)
        if epoch is None:
            return None
        frozen = self.core.freeze()
        batches = encode_snapshot(epoch, snapshot_records(frozen), wall_ms())
        return paced(_encoded(end, epoch, batches), self.slice_seconds)

    def write_snapshot(self, encoded: EncodedSnapshot) -> Path:
        """Write an encoded snapshot, then apply retention; return its path. May run in a worker
        thread while decisions and commits go on (the log guards what both threads touch).

        Segments are not deleted because a snapshot covers them, only once retention needs the
        space (as in Kafka). Raises `SnapshotWriteError` (the log and the engine stay usable) if
        the snapshot cannot be written or retention cannot delete a file; `LogError` only if the
        log itself failed."""
        path = self.log.write_encoded_snapshot(encoded.end_offset, encoded.epoch, encoded.batches)
        self.log.apply_retention(self.metadata_retention_bytes)
        return path

    def snapshot_now(self) -> Path:
        """`snapshot` and `write_snapshot` on this thread, without an event loop (tools, tests)."""
        return self.write_snapshot(finish(self.snapshot()))

    def reload(self) -> None:
        """Rebuild the state from the newest snapshot, as a standby that `catch_up` brings forward
        (after a lost epoch, or once the leader's snapshot was installed in place of the log)."""
        self.install(self.fresh_core())

    def fresh_core(self) -> tuple[ControllerCore, LoadedSnapshot]:
        """A new core from the newest snapshot, built aside (the engine is untouched: a worker
        thread may build it while the log holds still)."""
        config, rng = self.core.config, self.core.rng
        return load_snapshot(lambda: ControllerCore(config, rng), self.log)

    def install(self, fresh: tuple[ControllerCore, LoadedSnapshot]) -> None:
        """Make a standby of `fresh` (`fresh_core`): its state, replayed on from the snapshot's end."""
        core, loaded = fresh
        self.active = False
        self.term += 1
        self.core = core
        self._applied = loaded.snapshot.end_offset if loaded.snapshot is not None else self.log.log_start_offset
        self._transactions = TransactionReplay(replay_framing)
        self._data_records = loaded.records
        self._staged = []
        self._transaction = None
        self._orders = OutboundCollector(core.state)
        self._broken = None  # the state no longer runs ahead of the disk


def _encoded(end_offset: int, epoch: int, batches: Iterable[bytes]) -> Slices[EncodedSnapshot]:
    """Every batch of a snapshot, one per step (`snapshots.RECORDS_PER_BATCH` records each)."""
    encoded = []
    for batch in batches:
        encoded.append(batch)
        yield None
    return EncodedSnapshot(end_offset, epoch, encoded)
