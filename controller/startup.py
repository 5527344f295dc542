"""What the controller engine's start-up reads and reports: the newest snapshot replayed into
a core, the LeaderChange a single voter writes, how start-up went."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter
from protocol.records.transactions import MARKERS as TRANSACTION_MARKERS
from protocol.records.transactions import markers_in_snapshot

from .core import ControllerCore
from .log import MetadataLog, RecoveryReport, SnapshotId
from .state.cluster import ReplayError


@dataclass(frozen=True)
class StartupReport:
    snapshot: SnapshotId | None
    snapshot_records: int
    replayed_records: int
    controller_epoch: int
    recovery: RecoveryReport
    seconds: float
    #: what start-up aborted: a metadata transaction the previous controller left open (else None)
    aborted: str | None = None


def load_snapshot(core: ControllerCore, log: MetadataLog) -> tuple[SnapshotId | None, int]:
    """Replay the newest valid snapshot into `core`: its id and record count (None, 0 if none)."""
    loaded = log.load_latest_snapshot()
    if loaded is None:
        return None, 0
    snapshot_id, records = loaded
    offset = snapshot_id.end_offset - 1
    for record, _ in records:
        if isinstance(record, TRANSACTION_MARKERS):
            raise ReplayError(f"snapshot {snapshot_id}: {markers_in_snapshot(record, offset)}")
        core.replay(record, offset, snapshot_id.epoch)
    core.state.controller_epoch = max(core.state.controller_epoch, snapshot_id.epoch)
    core.authorizer()  # the ACL snapshot built once, from the snapshot's ACLs
    return snapshot_id, len(records)


def replay_framing(message: str, offset: int) -> None:  # Kafka's replay stops here too
    raise ReplayError(f"the metadata log cannot be replayed at offset {offset}: {message}")


def leader_change(node_id: int) -> LeaderChangeMessage:
    """The LeaderChange `MetadataLog.append_leader_change` writes for a single voter."""
    voter = LeaderChangeMessageVoter(voter_id=node_id)
    return LeaderChangeMessage(leader_id=node_id, voters=(voter,), granting_voters=(voter,))
