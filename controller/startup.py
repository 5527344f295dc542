"""What the controller engine's start-up reads and reports: the newest snapshot replayed into
a core, the LeaderChange a single voter writes, how start-up went."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter
from protocol.records.transactions import MARKERS as TRANSACTION_MARKERS
from protocol.records.transactions import markers_in_snapshot
from protocol.spec import Data

from .core import ControllerCore
from .log import MetadataLog, RecoveryReport, SnapshotId
from .slices import finish
from .state.cluster import ReplayError

if TYPE_CHECKING:
    from .engine import ControllerEngine


@dataclass(frozen=True)
class StartupReport:
    """How start-up went, with the time of each phase (wall seconds): the snapshot read (files
    read, batches validated, records decoded), the snapshot replayed into the state, the log
    after it replayed (a sole voter replays it all at start-up; a quorum's member replays what is
    committed as it learns of it, not counted here), and the whole start-up (`seconds`: the
    phases, opening and recovering the log, and for `ControllerEngine.start` the new epoch)."""

    snapshot: SnapshotId | None
    snapshot_records: int
    replayed_records: int
    controller_epoch: int
    recovery: RecoveryReport
    seconds: float
    #: what start-up aborted: a metadata transaction the previous controller left open (else None)
    aborted: str | None = None
    snapshot_read_seconds: float = 0.0
    snapshot_replay_seconds: float = 0.0
    log_replay_seconds: float = 0.0

    @classmethod
    def after_snapshot(
        cls, loaded: LoadedSnapshot, controller_epoch: int, recovery: RecoveryReport, seconds: float
    ) -> StartupReport:
        """The report once the log is open and its snapshot loaded (`load_snapshot`)."""
        return cls(
            snapshot=loaded.snapshot,
            snapshot_records=loaded.records,
            replayed_records=0,
            controller_epoch=controller_epoch,
            recovery=recovery,
            seconds=seconds,
            snapshot_read_seconds=loaded.read_seconds,
            snapshot_replay_seconds=loaded.replay_seconds,
        )

    def with_log_replayed(self, seconds: float) -> StartupReport:
        """This report after `seconds` more of replaying the log (a sole voter's start-up)."""
        return dataclasses.replace(
            self, log_replay_seconds=self.log_replay_seconds + seconds, seconds=self.seconds + seconds
        )


class LoadedSnapshot(NamedTuple):
    """What `load_snapshot` replayed: the snapshot (None if there is none), its records, the time
    its reading (and decoding) and its replay took."""

    snapshot: SnapshotId | None
    records: int
    read_seconds: float
    replay_seconds: float


def load_snapshot(new_core: Callable[[], ControllerCore], log: MetadataLog) -> tuple[ControllerCore, LoadedSnapshot]:
    """A core with the newest valid snapshot replayed into it, batch by batch as the snapshot is
    read (a snapshot found invalid part-way is dropped with the core it began, and the next older
    one replayed into a new core: `MetadataLog.replay_latest_snapshot`)."""
    started = time.perf_counter()
    replay = _SnapshotReplay(new_core)
    snapshot_id = log.replay_latest_snapshot(replay.start)
    core = replay.core
    took = time.perf_counter() - started
    began = time.perf_counter()
    core.state.replication.build_indexes()  # deferred by `start`: built once, from the whole state
    if snapshot_id is None:
        return core, LoadedSnapshot(None, 0, took, 0.0)
    core.state.controller_epoch = max(core.state.controller_epoch, snapshot_id.epoch)
    core.authorizer()  # the ACL snapshot built once, from the snapshot's ACLs
    replaying = replay.seconds + time.perf_counter() - began
    return core, LoadedSnapshot(snapshot_id, replay.records, took - replaying, replaying)


class _SnapshotReplay:
    """Replays the batches of the snapshot last begun (`start`) into `core`: a new core for each
    snapshot begun after one that replayed anything, its per-broker indexes deferred (the
    caller builds them once the snapshot is in); the records replayed and their time."""

    def __init__(self, new_core: Callable[[], ControllerCore]) -> None:
        self._new_core = new_core
        self.core = self._deferred_core()
        self.records = 0
        self.seconds = 0.0
        self._snapshot = SnapshotId(0, 0)

    def start(self, snapshot_id: SnapshotId) -> Callable[[list[tuple[Data, int]]], None]:
        if self.records:
            self.core = self._deferred_core()
        self.records, self.seconds, self._snapshot = 0, 0.0, snapshot_id
        return self._replay

    def _deferred_core(self) -> ControllerCore:
        core = self._new_core()
        core.state.replication.defer_indexes()
        return core

    def _replay(self, batch: list[tuple[Data, int]]) -> None:
        began = time.perf_counter()
        core, snapshot_id = self.core, self._snapshot
        offset, epoch = snapshot_id.end_offset - 1, snapshot_id.epoch
        for record, _ in batch:
            if isinstance(record, TRANSACTION_MARKERS):
                raise ReplayError(f"snapshot {snapshot_id}: {markers_in_snapshot(record, offset)}")
            core.replay(record, offset, epoch)
        self.records += len(batch)
        self.seconds += time.perf_counter() - began


def replay_whole_log(engine: ControllerEngine) -> int:
    """A sole voter's start-up: replay the log after the snapshot at once (all of it is committed);
    the records replayed. Their time goes into `engine.startup`."""
    started = time.perf_counter()
    replayed = finish(engine.catch_up(engine.log.next_offset))
    engine.startup = engine.startup.with_log_replayed(time.perf_counter() - started)
    return replayed


def replay_framing(message: str, offset: int) -> None:  # Kafka's replay stops here too
    raise ReplayError(f"the metadata log cannot be replayed at offset {offset}: {message}")


def leader_change(node_id: int) -> LeaderChangeMessage:
    """The LeaderChange `MetadataLog.append_leader_change` writes for a single voter."""
    voter = LeaderChangeMessageVoter(voter_id=node_id)
    return LeaderChangeMessage(leader_id=node_id, voters=(voter,), granting_voters=(voter,))
