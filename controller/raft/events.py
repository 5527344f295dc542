"""What the shell tells the Raft core: the inputs of `RaftNode.handle(now_ms, event)`.

Rules:
- Every event comes with the time (`now_ms`, monotonic milliseconds, an int) as an argument of
  `handle`, never inside the event; `Tick` carries nothing else. The shell ticks the core at
  `RaftNode.next_wakeup_ms(now_ms)` at the latest (every other event does what a tick does, too).
- Requests and responses are matched by `correlation_id`, which the core assigns to the requests
  it sends (`SendRequest`) and the shell gives back with the answer. A response the core no
  longer expects (a late one, a duplicate, one sent to an earlier state) is ignored.
- `RequestFailed` is the shell saying that a request will not be answered (connection refused
  or closed, the peer gone). The core also gives up on its own after the request timeout.
- `LogFlushed(end_offset)`: everything below `end_offset` is durable (fsync'd); this is the one
  "local append done" signal, for a leader's appends and for a follower's alike (the core counts
  only flushed offsets: a leader's own for the high watermark, a follower's before it fetches
  again, since the leader counts a voter's fetch offset as durable).
- `Resign(epoch)`: the shell is stopping the node (a graceful shutdown, Kafka's
  `KafkaRaftClient.shutdown`): a leader of `epoch` resigns (Resigned, with its preferred
  successors) and sends EndQuorumEpoch to the other voters, so that they elect without waiting
  out their fetch timeout; in any other state, or another epoch, nothing happens.
- `SnapshotInstalled` answers an `InstallSnapshot` action; `SnapshotCreated` is the layer above
  having written a snapshot of the committed state (end offset at most the high watermark): the
  log below it may go, and lagging followers will be sent it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import NodeId, OffsetAndEpoch
from .messages import Request, Response


@dataclass(frozen=True, slots=True)
class Tick:
    pass


@dataclass(frozen=True, slots=True)
class RequestReceived:
    source: NodeId
    correlation_id: int
    request: Request


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    source: NodeId
    correlation_id: int
    response: Response


@dataclass(frozen=True, slots=True)
class RequestFailed:
    destination: NodeId
    correlation_id: int


@dataclass(frozen=True, slots=True)
class LogFlushed:
    end_offset: int


@dataclass(frozen=True, slots=True)
class SnapshotInstalled:
    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class SnapshotCreated:
    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class Resign:
    epoch: int


Event = (
    Tick
    | RequestReceived
    | ResponseReceived
    | RequestFailed
    | LogFlushed
    | SnapshotInstalled
    | SnapshotCreated
    | Resign
)
