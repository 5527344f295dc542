"""Where the Raft core starts from on a node's restart: its log as the newest snapshot and the
batches after it, with their epochs, and the election state the `quorum-state` file kept.

Rules:
- The core's log starts at the newest snapshot's end when there is one (whatever segments are
  kept below it are the controller's to read, not the core's to serve); an epoch that began
  before that snapshot goes on after it, from the snapshot's end.
- Everything on disk at start-up was fsync'd: the flushed end is the log's end.
- A missing or invalid `quorum-state` is no election state (a node that never voted).
"""

from __future__ import annotations

from ..log import MetadataLog
from ..raft import ElectionState, Epoch, EpochStart, LogView, NodeId, OffsetAndEpoch


def recovered_view(log_: MetadataLog) -> LogView:
    """The log as the core must see it at start-up: from the newest snapshot (if any) to its end,
    with the epochs of its batches."""
    snapshots = log_.snapshots()
    snapshot = OffsetAndEpoch(snapshots[-1].end_offset, Epoch(snapshots[-1].epoch)) if snapshots else None
    start = snapshot.offset if snapshot is not None else 0
    kept: list[EpochStart] = []
    for epoch, offset in log_.epoch_entries():
        if offset < start:
            kept = [EpochStart(Epoch(epoch), start)]  # an epoch that began before the snapshot goes on after it
        else:
            kept.append(EpochStart(Epoch(epoch), offset))
    kept = [entry for entry in kept if entry.start_offset < log_.next_offset]
    return LogView(start, log_.next_offset, log_.next_offset, tuple(kept), snapshot)


def recovered_election(log_: MetadataLog) -> ElectionState | None:
    state = log_.quorum_state
    if state is None:
        return None
    leader = NodeId(state.leader_id) if state.leader_id >= 0 else None
    voted = NodeId(state.voted_id) if state.voted_id >= 0 else None
    return ElectionState(Epoch(max(state.leader_epoch, 0)), leader, voted)
