"""What the Raft core asks of the shell: the outputs, an ordered list per call.

Rules:
- The shell executes the actions of a list in order, and each one completes before the next
  starts: above all, a `PersistQuorumState` is written and fsync'd before any later action of the
  list (and of later lists) takes effect, so no vote, no BeginQuorumEpoch answer and no message of
  a new epoch leaves the node before the state it depends on is durable (Kafka's
  `QuorumState.durableTransitionTo` writes the file before the transition).
- `AppendBatches` writes after the log's end (a leader's own batches, or a follower's from its
  leader, payloads as given); it need not be flushed before the next action: the shell reports
  durability with `LogFlushed`. `TruncateTo` takes effect before the next action (later appends
  follow it). `InstallSnapshot` may take its time: the shell writes the snapshot, replaces the
  log with it (durably) and then reports `SnapshotInstalled`; the core fetches nothing meanwhile.
- `BecomeLeader` is followed, in the same list, by the `AppendBatches` of the epoch's first
  batch: a LeaderChange control record (`LeaderChangeRecord` as its payload), as Kafka's
  `LeaderState.appendStartOfEpochControlRecords`. The controller above may append only once it has
  seen `BecomeLeader`, and its records commit when `HighWatermark` passes their batch's end.
- `StopLeading` is emitted whenever this node leaves the leadership of an epoch (resigned, or
  stepped down on a higher epoch): the controller fails every pending write of that epoch with
  NOT_CONTROLLER, never NONE, since it cannot know whether they will commit.
- `HighWatermark` is emitted only when the high watermark grows (it never goes back).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import Epoch, NodeId, OffsetAndEpoch
from .messages import Batch, Request, Response
from .state import ElectionState


@dataclass(frozen=True, slots=True)
class SendRequest:
    destination: NodeId
    correlation_id: int
    request: Request


@dataclass(frozen=True, slots=True)
class SendResponse:
    destination: NodeId
    correlation_id: int
    response: Response


@dataclass(frozen=True, slots=True)
class PersistQuorumState:
    election: ElectionState


@dataclass(frozen=True, slots=True)
class AppendBatches:
    batches: tuple[Batch, ...]


@dataclass(frozen=True, slots=True)
class TruncateTo:
    end_offset: int


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """Replace the whole log with this snapshot (its records end at `snapshot_id.offset`)."""

    snapshot_id: OffsetAndEpoch
    payload: object


@dataclass(frozen=True, slots=True)
class BecomeLeader:
    epoch: Epoch
    epoch_start_offset: int  # the LeaderChange batch's offset


@dataclass(frozen=True, slots=True)
class StopLeading:
    epoch: Epoch


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    """Who leads now, as far as this node knows (for NOT_CONTROLLER answers and redirects)."""

    epoch: Epoch
    leader_id: NodeId | None


@dataclass(frozen=True, slots=True)
class HighWatermark:
    offset: int


@dataclass(frozen=True, slots=True)
class LeaderChangeRecord:
    """The payload of a leader's first batch: Kafka's LeaderChangeMessage."""

    leader_id: NodeId
    voters: tuple[NodeId, ...]
    granting_voters: tuple[NodeId, ...]


Action = (
    SendRequest
    | SendResponse
    | PersistQuorumState
    | AppendBatches
    | TruncateTo
    | InstallSnapshot
    | BecomeLeader
    | StopLeading
    | LeaderChanged
    | HighWatermark
)
