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
  the last snapshot, the state is written as a snapshot and segments wholly below it deleted.
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
from .outbound import ControlOrder
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


@dataclass(frozen=True)
class Decision:
    """A decided request: its response (to send after the next commit) and the control orders."""

    response: Data | None
    orders: list[ControlOrder]
    records: int


class ControllerEngine:
    def __init__(self, core: ControllerCore, log: MetadataLog, *, snapshot_bytes: int, report: StartupReport) -> None:
        self.core = core
        self.log = log
        self.snapshot_bytes = snapshot_bytes
        self.startup = report
        self._staged: list[list[RecordAndVersion]] = []
        self._next_offset = log.next_offset
        self._broken: str | None = None

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
        segment_bytes: int = 1 << 30,
        now_ns: int | None = None,
        rng: random.Random | None = None,
    ) -> ControllerEngine:
        """Open (or format) the data dir, rebuild the state, and open a new controller epoch."""
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
        return cls(core, log, snapshot_bytes=snapshot_bytes, report=report)

    # ------------------------------------------------------------------ decisions
    @property
    def controller_epoch(self) -> int:
        return self.core.state.controller_epoch

    @property
    def staged_requests(self) -> int:
        return len(self._staged)

    def decide(self, api_key: int, version: int, body: Data, now_ns: int) -> Decision:
        """Decide one request and stage its records; answer only after the next `commit`."""
        self._check_usable()
        result = self.core.handle(api_key, version, body, now_ns, self._next_offset)
        return Decision(result.response, self._stage(list(result.records)), len(result.records))

    def expire_sessions(self, now_ns: int) -> list[ControlOrder]:
        """Fence every broker whose session ran out (each its own atomic group); stage the records."""
        self._check_usable()
        orders: list[ControlOrder] = []
        while (result := self.core.expire_sessions(now_ns)) is not None:
            orders.extend(self._stage(list(result.records)))
        return orders

    def _stage(self, records: list[RecordAndVersion]) -> list[ControlOrder]:
        if not records:
            return []
        placed = [(record, self._next_offset + i) for i, (record, _) in enumerate(records)]
        orders = self.core.apply(placed)
        self._staged.append(records)
        self._next_offset += len(records)
        return orders

    # ------------------------------------------------------------------ durability
    def commit(self) -> int:
        """Append every staged request (one batch each) with one write and one fsync."""
        self._check_usable()
        if not self._staged:
            return 0
        groups, self._staged = self._staged, []
        try:
            self.log.append(groups, self.controller_epoch, _wall_ms())
        except BaseException as exc:
            self._broken = f"append failed: {exc}"
            raise
        if self.log.next_offset != self._next_offset:
            self._broken = f"log ends at {self.log.next_offset}, the state at {self._next_offset}"
            raise LogError(self._broken)
        self.maybe_snapshot()
        return sum(len(group) for group in groups)

    def maybe_snapshot(self) -> Path | None:
        if self._staged or self.log.bytes_since_snapshot < self.snapshot_bytes:
            return None
        return self.snapshot()

    def snapshot(self) -> Path:
        """Write the committed state as a snapshot now, and drop the segments it covers."""
        if self._staged:
            raise RuntimeError("cannot snapshot with uncommitted records staged")
        end = self.log.next_offset
        path = self.log.write_snapshot(end, self.controller_epoch, self.core.snapshot_records(), _wall_ms())
        self.log.delete_segments_below(end)
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
