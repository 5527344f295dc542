"""How a Raft node reads the answers to its requests (Kafka's `KafkaRaftClient.handle*Response`).

Rules:
- Only an expected answer is read (the one request in flight to that peer, same correlation id);
  reading it makes the peer ready again, or backing off when the answer was of no use (a
  top-level error, an unexpected error, records that do not follow the log's end).
- No answer can stop the node or contradict what it knows: an answer naming an epoch above
  `MAX_EPOCH`, no epoch at all (a top-level error), or a leader that contradicts the node's
  view (itself, when it does not lead that epoch; another leader of an epoch whose leader it
  knows) is ignored and the peer backed off (Kafka throws); so is a diverging epoch that would
  truncate below the high watermark or the log's start (Kafka throws: a leader never asks it).
- First what every answer carries (Kafka's `maybeHandleCommonResponse`): an older epoch, or
  UNKNOWN_LEADER_EPOCH, is ignored; a newer epoch, FENCED_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER
  moves the node to what the answer says (and backs off when it said nothing new: Kafka
  retries at once, which spins against a peer that keeps saying the same); the leader of this
  epoch, when the node knew none, is followed.
- Vote: a grant or refusal is tallied once per voter; a prospective with a majority of pre-votes
  becomes a candidate, a candidate with a majority of votes the leader; a prospective that can
  no longer win gives up at once, a candidate waits out its election timeout.
- Fetch (a follower, or an observer looking for the leader): a diverging epoch truncates the log
  to `LogView.truncation_offset` (never below the high watermark); a
  snapshot id starts FetchSnapshot; records are appended if they follow the log's end, and the
  high watermark becomes the leader's, capped at the log's end. Any of these is a successful
  fetch: the fetch timeout restarts.
- FetchSnapshot: the snapshot asked for is installed (`InstallSnapshot`, then the shell's
  `SnapshotInstalled`) unless the log already holds its last entry (see `_holds_snapshot_end`
  for where this departs from Kafka); SNAPSHOT_NOT_FOUND goes back to fetching.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from protocol.error_codes import ErrorCode

from . import transitions
from .actions import AppendBatches, InstallSnapshot, TruncateTo
from .ids import MAX_EPOCH, Epoch, NodeId, OffsetAndEpoch
from .leader import Leader
from .log import LogViewError
from .messages import (
    TOP_LEVEL_ERRORS,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotResponse,
    Response,
    VoteResponse,
)
from .state import Candidate, Follower, Prospective, Resigned

if TYPE_CHECKING:
    from .node import RaftNode


def read(node: RaftNode, now_ms: int, source: NodeId, correlation_id: int, response: Response) -> None:
    if not node.in_flight.expects(source, correlation_id):
        return
    if response.error in TOP_LEVEL_ERRORS or response.leader_epoch < 0:
        ok = False
    elif isinstance(response, VoteResponse):
        ok = vote(node, now_ms, source, response)
    elif isinstance(response, BeginQuorumEpochResponse | EndQuorumEpochResponse):
        ok = quorum_epoch(node, now_ms, source, response)
    elif isinstance(response, FetchResponse):
        ok = fetch(node, now_ms, response)
    else:
        ok = fetch_snapshot(node, now_ms, response)
    node.in_flight.answered(source, correlation_id, ok, now_ms)


def common(node: RaftNode, error: int, leader_id: NodeId | None, epoch: Epoch, now_ms: int) -> bool | None:
    """What every answer says about epochs and leaders: handled (True: fine, False: back off),
    or None: the answer is for this epoch and the caller reads the rest."""
    if epoch < node.epoch or error == ErrorCode.UNKNOWN_LEADER_EPOCH:
        return True
    if epoch > MAX_EPOCH or not node.consistent(leader_id, epoch):
        return False
    if epoch > node.epoch or error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER):
        before = (node.epoch, node.leader_id)
        transitions.maybe_transition(node, leader_id, epoch, now_ms)
        return (node.epoch, node.leader_id) != before
    if leader_id is not None and node.leader_id is None:
        transitions.maybe_transition(node, leader_id, epoch, now_ms)
        return None if error == ErrorCode.NONE else True
    if error == ErrorCode.NONE:
        return None
    return False


def vote(node: RaftNode, now_ms: int, source: NodeId, response: VoteResponse) -> bool:
    handled = common(node, response.error, response.leader_id, response.leader_epoch, now_ms)
    if handled is not None:
        return handled
    state = node.state
    if not isinstance(state, Prospective | Candidate):
        return True  # already leader, or no longer standing
    tally = state.tally.record(source, response.vote_granted)
    node.state = replace(state, tally=tally)
    if tally.won:
        if isinstance(state, Prospective):
            transitions.to_candidate(node, now_ms)
        else:
            transitions.to_leader(node, now_ms)
    elif tally.lost and isinstance(state, Prospective):
        transitions.after_prospective_loss(node, now_ms)
    return True


def quorum_epoch(
    node: RaftNode, now_ms: int, source: NodeId, response: BeginQuorumEpochResponse | EndQuorumEpochResponse
) -> bool:
    handled = common(node, response.error, response.leader_id, response.leader_epoch, now_ms)
    if handled is not None:
        return handled
    state = node.state
    if isinstance(response, BeginQuorumEpochResponse) and isinstance(state, Leader):
        node.state = replace(state, acknowledged=state.acknowledged | {source})
    elif isinstance(response, EndQuorumEpochResponse) and isinstance(state, Resigned):
        node.state = replace(state, unacknowledged=state.unacknowledged - {source})
    return True


def fetch(node: RaftNode, now_ms: int, response: FetchResponse) -> bool:
    handled = common(node, response.error, response.leader_id, response.leader_epoch, now_ms)
    if handled is not None:
        return handled
    state = node.state
    if not isinstance(state, Follower):
        return True
    if response.diverging_epoch is not None:
        if not _truncate(node, response):
            return False
    elif response.snapshot_id is not None:
        if response.snapshot_id.offset < 0 or response.snapshot_id.epoch < 0:
            return False
        state = replace(state, fetching_snapshot=response.snapshot_id)
    elif not _append(node, response):
        return False
    node.state = replace(state, has_fetched=True, fetch_deadline_ms=now_ms + node.config.fetch_timeout_ms)
    return True


def _truncate(node: RaftNode, response: FetchResponse) -> bool:
    """Truncate to where the leader's log diverges from this one (False: not a truncation a
    leader can ask, below the high watermark or the log's start: ignored)."""
    assert response.diverging_epoch is not None
    offset = node.log.truncation_offset(response.diverging_epoch)
    if (node.high_watermark is not None and offset < node.high_watermark) or offset < node.log.start_offset:
        return False
    if offset < node.log.end_offset:
        node.log = node.log.truncated(offset)
        node.out.append(TruncateTo(offset))
    return True


def _append(node: RaftNode, response: FetchResponse) -> bool:
    batches = response.records
    if batches:
        if any(batch.epoch > response.leader_epoch for batch in batches):
            return False
        try:
            node.log = node.log.appended(batches)
        except LogViewError:
            return False  # not the records after this log's end: a stale or mangled answer
        node.out.append(AppendBatches(batches))
    if response.high_watermark >= 0:
        node.advance_high_watermark(min(response.high_watermark, node.log.end_offset))
    return True


def fetch_snapshot(node: RaftNode, now_ms: int, response: FetchSnapshotResponse) -> bool:
    handled = common(node, response.error, response.leader_id, response.leader_epoch, now_ms)
    if handled is not None:
        return handled
    state = node.state
    if not isinstance(state, Follower):
        return True
    deadline = now_ms + node.config.fetch_timeout_ms
    snapshot = response.snapshot_id
    if response.error == ErrorCode.SNAPSHOT_NOT_FOUND or snapshot is None:
        node.state = replace(state, fetching_snapshot=None, fetch_deadline_ms=deadline)
        return True
    if response.error != ErrorCode.NONE or snapshot != state.fetching_snapshot:
        return False
    if not _holds_snapshot_end(node, snapshot):
        node.installing_snapshot = snapshot
        node.out.append(InstallSnapshot(snapshot, response.payload))
    node.state = replace(state, fetching_snapshot=None, has_fetched=True, fetch_deadline_ms=deadline)
    return True


def _holds_snapshot_end(node: RaftNode, snapshot: OffsetAndEpoch) -> bool:
    """Whether the log already holds the snapshot's last entry (then the snapshot is a prefix
    of it). Otherwise the whole log goes: the snapshot is committed, and whatever of the log
    conflicts with it was not. Kafka installs only a snapshot ahead of the log's (epoch, end
    offset) and throws otherwise, which leaves a follower whose uncommitted tail has a larger
    epoch than the snapshot, but ends below it, unable to catch up (the simulation found one)."""
    log = node.log
    if snapshot.offset == log.start_offset and log.snapshot == snapshot:
        return True
    return snapshot.offset <= log.end_offset and log.epoch_at(snapshot.offset - 1) == snapshot.epoch
