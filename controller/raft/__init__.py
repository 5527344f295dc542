"""KRaft's consensus (Kafka's `raft` module, KIP-595 with KIP-996's pre-vote) as a pure state
machine: the core of the controller quorum (docs/quorum.md, step 3).

Rules: nothing here imports trio, sockets, the clock, logging or the filesystem; time is passed
in (`now_ms`, monotonic milliseconds), randomness is the `random.Random` given to each node.
The shell (step 4) turns `Action`s into I/O and I/O into events. Modules:
- `ids`: `NodeId`, `Epoch`, `OffsetAndEpoch`.
- `config`: `RaftConfig`, the voter set and Kafka's timeouts.
- `messages`: the five RPCs as the core reads them (records as batch summaries).
- `events` / `actions`: what goes in (`RaftNode.handle`) and what comes out, in order.
- `log`: `LogView`, the local log as the core sees it (ends, flushed end, epoch cache, snapshot).
- `state`: the persisted `ElectionState`, the election states and `Tally`; `leader`: the
  leader's replicas, high watermark and check-quorum; `requests`: requests in flight.
- `node`: `RaftNode`, its interface, log and high watermark; `transitions`: its state
  transitions (Kafka's `QuorumState`); `inbound` answers requests, `outbound` reads responses,
  `poll` runs the timers and sends what is due.
- `wire`, `wire_requests`, `wire_responses`: the messages to and from Kafka's wire dataclasses
  (`protocol.messages`), for the shell; `describe_quorum`: DescribeQuorum's answer from the
  leader's progress.

Left out, on purpose (Kafka has them): dynamic voter sets (KIP-853's AddRaftVoter, RemoveRaftVoter,
UpdateRaftVoter, directory ids and endpoints: fencer's voters are static, kraft.version 0), a
graceful shutdown and `resign()` on request, several retained snapshots (a node keeps its
latest one), and the batching and linger of appends (the controller above decides its batches).
"""

from .actions import (
    Action,
    AppendBatches,
    BecomeLeader,
    HighWatermark,
    InstallSnapshot,
    LeaderChanged,
    LeaderChangeRecord,
    PersistQuorumState,
    SendRequest,
    SendResponse,
    StopLeading,
    TruncateTo,
)
from .config import RaftConfig
from .events import (
    Event,
    LogFlushed,
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    SnapshotCreated,
    SnapshotInstalled,
    Tick,
)
from .ids import Epoch, NodeId, OffsetAndEpoch
from .log import EpochStart, LogView
from .messages import Batch
from .node import Appended, NotLeader, RaftNode
from .state import ElectionState, RaftError

__all__ = [
    "Action",
    "AppendBatches",
    "Appended",
    "Batch",
    "BecomeLeader",
    "ElectionState",
    "Epoch",
    "EpochStart",
    "Event",
    "HighWatermark",
    "InstallSnapshot",
    "LeaderChangeRecord",
    "LeaderChanged",
    "LogFlushed",
    "LogView",
    "NodeId",
    "NotLeader",
    "OffsetAndEpoch",
    "PersistQuorumState",
    "RaftConfig",
    "RaftError",
    "RaftNode",
    "RequestFailed",
    "RequestReceived",
    "Resign",
    "ResponseReceived",
    "SendRequest",
    "SendResponse",
    "SnapshotCreated",
    "SnapshotInstalled",
    "StopLeading",
    "Tick",
    "TruncateTo",
]
