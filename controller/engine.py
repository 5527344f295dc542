"""The controller core bound to its metadata log: start-up, staging, group commit, snapshots.

Rules:
- Start-up is replay: the newest valid snapshot, then every record of the log after it; then a
  LeaderChange control record opens the new controller epoch (previous epoch + 1), which every
  later batch carries and every control request names.
- `decide` runs one request through the core and stages its records: they get their offsets at
  once and are replayed at once, so the next request sees them (as KRaft does), but nothing
  may be answered before `commit`, which appends every staged request's records, one batch per
  request (atomic), in one write and one fsync. A failed append leaves the engine unusable: the
  in-memory state is ahead of the disk, and only a restart's recovery can reconcile them.
- After a commit, once `snapshot_bytes` of log (default 20 MiB, as Kafka) were appended since
  the last snapshot, the state is written as a snapshot; then retention runs as in Kafka's
  metadata log: nothing is deleted until the segments and snapshots together pass
  `metadata_retention_bytes` (default 100 MiB); then the oldest snapshots go, with the segments
  wholly below the oldest snapshot kept. The newest snapshot and the active segment always stay.
- A snapshot that cannot be written (or files retention cannot delete) is a `SnapshotWriteError`:
  the log and the engine stay usable, and `snapshot_due` stays true: the caller picks the retry.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter
from protocol.spec import Data

from .core import ControllerCore
from .log import LogError, MetadataLog, RecoveryReport, SnapshotId
from .log.retention import DEFAULT_RETENTION_BYTES
from .log.store import DEFAULT_SEGMENT_BYTES, PreparedAppend
from .outbound import ControlOrder, OutboundCollector
from .state.controller_state import ControllerConfig, RecordAndVersion

DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class StartupReport:
    snapshot: SnapshotId | None
    snapshot_records: int
    replayed_records: int
    controller_epoch: int
    recovery: RecoveryReport
    seconds: float


class ControllerEngine:
    def __init__(
        self,
        core: ControllerCore,
        log: MetadataLog,
        *,
        snapshot_bytes: int,
        metadata_retention_bytes: int,
        report: StartupReport,
    ) -> None:
        self.core = core
        self.log = log
        self.snapshot_bytes = snapshot_bytes
        self.metadata_retention_bytes = metadata_retention_bytes
        self.startup = report
        self._staged: list[list[RecordAndVersion]] = []
        self._next_offset = log.next_offset
        self._broken: str | None = None
        self._orders = OutboundCollector(core.state)

    @classmethod
    def start(
        cls,
        data_dir: Path,
        *,
        config: ControllerConfig | None = None,
        cluster_id: str | None = None,
        node_id: int = 1,
        session_timeout_ms: int = 9000,
        host: str = "127.0.0.1",
        port: int = 9093,
        repair: bool = False,
        fsync: bool = True,
        snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        metadata_retention_bytes: int = DEFAULT_RETENTION_BYTES,
        now_ns: int | None = None,
        rng: random.Random | None = None,
    ) -> ControllerEngine:
        """Open (or format) the data dir, rebuild the state, and open a new controller epoch.

        Segments roll at `segment_bytes` (Kafka's metadata.log.segment.bytes); retention keeps
        the segments and snapshots to `metadata_retention_bytes` (metadata.max.retention.bytes)."""
        if metadata_retention_bytes < 0:
            raise ValueError(f"metadata_retention_bytes must not be negative, not {metadata_retention_bytes}")
        started = time.perf_counter()
        wanted_cluster = config.cluster_id if config is not None else cluster_id
        log = MetadataLog.open(
            Path(data_dir),
            cluster_id=wanted_cluster,
            node_id=config.node_id if config else node_id,
            repair=repair,
            fsync=fsync,
            segment_bytes=segment_bytes,
        )
        if config is None:
            config = ControllerConfig(
                cluster_id=log.cluster_id, node_id=node_id, session_timeout_ms=session_timeout_ms, host=host, port=port
            )
        elif config.cluster_id != log.cluster_id:
            raise LogError(f"cluster id {config.cluster_id} does not match {log.cluster_id} in {data_dir}")
        core = ControllerCore(config, rng)
        snapshot_id, snapshot_count, start = None, 0, 0
        loaded = log.load_latest_snapshot()
        if loaded is not None:
            snapshot_id, records = loaded
            for record, _ in records:
                core.replay(record, snapshot_id.end_offset - 1, snapshot_id.epoch)
            core.state.controller_epoch = max(core.state.controller_epoch, snapshot_id.epoch)
            snapshot_count, start = len(records), snapshot_id.end_offset
        replayed = 0
        for entry in log.read(start):
            core.replay(entry.record, entry.offset, entry.epoch)
            replayed += 1
        epoch = max(log.last_epoch, core.state.controller_epoch) + 1
        offset = log.append_leader_change(epoch, config.node_id, _wall_ms())
        core.replay(_leader_change(config.node_id), offset, epoch)
        core.start_sessions(time.monotonic_ns() if now_ns is None else now_ns)
        report = StartupReport(
            snapshot=snapshot_id,
            snapshot_records=snapshot_count,
            replayed_records=replayed,
            controller_epoch=epoch,
            recovery=log.recovery,
            seconds=time.perf_counter() - started,
        )
        return cls(
            core, log, snapshot_bytes=snapshot_bytes, metadata_retention_bytes=metadata_retention_bytes, report=report
        )

    # ------------------------------------------------------------------ decisions
    @property
    def controller_epoch(self) -> int:
        return self.core.state.controller_epoch

    def decide(self, api_key: int, version: int, body: Data, now_ns: int) -> Data | None:
        """Decide one request, stage its records, return its response (send it only once committed).

        The control orders its records call for accumulate until `take_orders` (one batch per
        broker for everything decided since the last take)."""
        self._check_usable()
        result = self.core.handle(api_key, version, body, now_ns, self._next_offset)
        self._stage(list(result.records))
        return result.response

    def expire_sessions(self, now_ns: int) -> None:
        """Fence every broker whose session ran out (each its own atomic group); stage the records."""
        self._check_usable()
        while (result := self.core.expire_sessions(now_ns)) is not None:
            self._stage(list(result.records))

    def take_orders(self) -> list[ControlOrder]:
        """The control orders of everything decided since the last call, batched per broker."""
        orders = self._orders.orders()
        self._orders = OutboundCollector(self.core.state)
        return orders

    def _stage(self, records: list[RecordAndVersion]) -> None:
        if not records:
            return
        placed = [(record, self._next_offset + i) for i, (record, _) in enumerate(records)]
        self.core.apply(placed, self._orders)
        self._staged.append(records)
        self._next_offset += len(records)

    # ------------------------------------------------------------------ durability
    def commit(self) -> int:
        """Append every staged request (one batch each) with one write and one fsync; then snapshot if due."""
        records = self.append(self.take_staged())
        self.maybe_snapshot()
        return records

    def take_staged(self) -> list[list[RecordAndVersion]]:
        """The staged requests' records, handed over for `append` (call from the deciding thread)."""
        self._check_usable()
        groups, self._staged = self._staged, []
        return groups

    def append(self, groups: list[list[RecordAndVersion]]) -> int:
        """Make taken groups durable (encode and write on this thread)."""
        return self.write(self.prepare(groups))

    def prepare(self, groups: list[list[RecordAndVersion]]) -> tuple[PreparedAppend, int]:
        """Encode taken groups as batches (the deciding thread: this is CPU under the GIL)."""
        return self.log.prepare(groups, self.controller_epoch, _wall_ms()), sum(len(group) for group in groups)

    def write(self, prepared: tuple[PreparedAppend, int]) -> int:
        """Write and fsync prepared batches; may run in a worker thread (the GIL is released)."""
        batches, records = prepared
        if not batches.batches:
            return 0
        try:
            self.log.write_prepared(batches)
        except BaseException as exc:
            self._broken = f"append failed: {exc}"
            raise
        return records

    @property
    def settled(self) -> bool:
        """Is the state exactly what the log holds (nothing decided and not yet durable)?"""
        return self._next_offset == self.log.next_offset

    def snapshot_due(self) -> bool:
        return self.settled and self.log.bytes_since_snapshot >= self.snapshot_bytes

    def maybe_snapshot(self) -> Path | None:
        return self.snapshot() if self.snapshot_due() else None

    def snapshot(self) -> Path:
        """Write the committed state as a snapshot now, then apply retention."""
        return self.write_snapshot(self.snapshot_records())

    def snapshot_records(self) -> tuple[int, list[RecordAndVersion]]:
        """(end offset, records) of the settled state, for `write_snapshot` (deciding thread)."""
        if not self.settled:
            raise RuntimeError("cannot snapshot while decided records are not yet durable")
        return self.log.next_offset, self.core.snapshot_records()

    def write_snapshot(self, taken: tuple[int, list[RecordAndVersion]]) -> Path:
        """Write a snapshot taken with `snapshot_records`, then apply retention; return its path.

        May run in a worker thread while commits go on in another. Segments are not deleted
        because a snapshot covers them, only once retention needs the space (as in Kafka).
        Raises `SnapshotWriteError` (the log and the engine stay usable) if the snapshot cannot
        be written or retention cannot delete a file; `LogError` only if the log itself failed."""
        end, records = taken
        path = self.log.write_snapshot(end, self.controller_epoch, records, _wall_ms())
        self.log.apply_retention(self.metadata_retention_bytes)
        return path

    def close(self) -> None:
        self.log.close()

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise LogError(f"the controller cannot continue: {self._broken}")


def _leader_change(node_id: int) -> LeaderChangeMessage:
    voter = LeaderChangeMessageVoter(voter_id=node_id)
    return LeaderChangeMessage(leader_id=node_id, voters=(voter,), granting_voters=(voter,))


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000
