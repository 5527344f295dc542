"""The journal's entries on the fleet's own controller quorum (`--quorum`): its start and
timeouts, the faults the fleet made on its nodes, the leaders it saw, its pre-vote probes and how
the quorum came through each fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class ControllerFaulted:
    """The fleet acted on a node of its own controller quorum (`--quorum`): "kill" (SIGKILL),
    "restart", "pause" (SIGSTOP), "resume" (SIGCONT), "cut" (every proxy into and out of the node
    drops its connections and black-holes new ones), "heal".

    `duration_ms`: what the fault was planned to last (kill: the downtime), 0 for the actions that
    end one. `leader`, `leader_epoch`: the quorum's leader as the fleet last saw it then
    (DescribeQuorum), -1 when none was known."""

    kind: ClassVar[str] = "controller_fault"
    wall_ns: int
    node: int
    fault: str
    duration_ms: float
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class QuorumLeaderSeen:
    """The fleet saw a leader of its own quorum it had not seen before (a new leader or epoch):
    `node` answered DescribeQuorum as the leader of `leader_epoch`, with `high_watermark`."""

    kind: ClassVar[str] = "quorum_leader"
    wall_ns: int
    node: int
    leader_epoch: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class QuorumStarted:
    """The fleet started a controller quorum of its own (`--quorum`): its nodes' ids and the two Raft
    timeouts it gave every node (Kafka's controller.quorum.election.timeout.ms and fetch.timeout.ms)."""

    kind: ClassVar[str] = "quorum"
    wall_ns: int
    nodes: list[int]
    election_timeout_ms: int
    fetch_timeout_ms: int


@dataclass(frozen=True, slots=True)
class QuorumLeadersSeen:
    """A round of DescribeQuorum (every node that runs and is not paused, asked every 100 ms) in which
    the nodes that answered as a leader were not those of the round before: `leaders`, [node, epoch]
    pairs by node (empty: none did). Between two such entries, every round saw the same claims."""

    kind: ClassVar[str] = "quorum_leaders"
    wall_ns: int
    leaders: list[list[int]]


@dataclass(frozen=True, slots=True)
class VoteProbed:
    """A pre-vote (Vote v2 with PreVote) sent on purpose to `node` of the fleet's own quorum, in the
    node's own epoch as it last named it (`epoch`: a pre-vote in it changes nothing there), for voter
    `candidate` with a log behind the node's: the candidate claims a log ending at `last_offset`
    with `last_epoch`, while the node's log was known to end at `known_end` or later (the leader's
    DescribeQuorum named it a voter that far, within the high watermark: committed, never
    truncated). `error` and `granted`: the answer's (error -1: none came)."""

    kind: ClassVar[str] = "vote_probe"
    wall_ns: int
    node: int
    candidate: int
    epoch: int
    last_offset: int
    last_epoch: int
    known_end: int
    error: int
    granted: bool


@dataclass(frozen=True, slots=True)
class FailoverMeasured:
    """How the quorum and the brokers came through one controller fault (a "kill", "pause" or
    "cut" of `node`, begun at `wall_ns`; `role`: "leader" or "follower", the node's then).

    `leader`/`leader_epoch`: the leader before (-1: none known); `new_leader`/`new_leader_epoch`:
    the first leader of a newer epoch seen after it began (-1: none, or not looked for: a
    follower's fault); `elected_ms`: until then; `served_ms`: until a broker's request was first
    answered (not NOT_CONTROLLER) after it began, by a node other than a faulted leader. None:
    not within the measurement's bound or the run."""

    kind: ClassVar[str] = "failover"
    wall_ns: int
    node: int
    fault: str
    role: str
    leader: int
    leader_epoch: int
    new_leader: int
    new_leader_epoch: int
    elected_ms: float | None
    served_ms: float | None
