"""The fleet's own controller quorum (`--quorum N`) as pure logic: the quorum's timeouts,
who leads it (from DescribeQuorum answers), and the clock of each failover.

Rules:
- `QuorumTiming` holds the two Raft timeouts the fleet gives its controllers (Kafka's
  controller.quorum.election.timeout.ms and fetch.timeout.ms) and the bounds derived from them:
  `deposed_s`, how long a leader must be gone (paused, cut off) for the others to elect another
  and for a cut-off leader to resign by check-quorum (1.5 fetch timeouts) whatever the randomised
  election timeout ([T, 2T)) drew.
- DescribeQuorum (api key 55) is asked of each node about `__cluster_metadata` partition 0; only
  the leader answers it without an error (a follower: NOT_LEADER_OR_FOLLOWER, 6). The leader of
  the quorum, as far as a round of answers goes, is the one of the highest epoch among the nodes
  that say they lead (a deposed leader that has not yet heard of its successor may still say so).
  The leader's answer also names each voter's log end as it knows it (`LeaderView.voter_ends`):
  capped at the high watermark, how far that voter's log holds the committed log for good.
- A probing pre-vote (`pre_vote_request`, Vote v2 with PreVote, KIP-996) asks a node, in its own
  epoch, for a real voter whose log is empty (`STALE_LOG`): a pre-vote changes nothing on the node
  (no vote is cast, no epoch moves: the fleet never names an epoch above the node's own), and a
  node whose log holds a batch must refuse it, whatever its state (Raft's up-to-date check).
- `FailoverClock` times each controller fault from when it began: until a leader of a newer epoch
  than the one before the fault was seen (`elected_s`; only when the faulted node was the leader),
  and until a broker was answered again (`served_s`: the first answer to a broker's request that is
  not NOT_CONTROLLER, after the fault began, from a node other than the faulted one when that was
  the leader, since a cut-off leader may answer what needs no commit until it resigns). A
  measurement is over once both are known (the served time alone for a follower's fault) or when
  it is closed (its bound, or the end of the run), with what is known by then.
"""

from __future__ import annotations

import base64
import random
import uuid
from dataclasses import dataclass, field

from protocol.error_codes import ErrorCode
from protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartitionData,
    DescribeQuorumRequestTopicData,
    DescribeQuorumResponse,
)
from protocol.messages.vote import VoteRequest, VoteRequestPartitionData, VoteRequestTopicData, VoteResponse

METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_QUORUM_VERSION = 1  # Kafka 3.9's kafka-metadata-quorum speaks 0-2; 1 has the fetch times
VOTE_VERSION = 2  # the first with PreVote (KIP-996)
#: the (last offset, last epoch) of a probing pre-vote's candidate: an empty log, behind any other
STALE_LOG = (0, 0)
CHECK_QUORUM_FACTOR = 1.5  # Kafka's LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR
LEADER = "leader"
FOLLOWER = "follower"


@dataclass(frozen=True, slots=True)
class QuorumTiming:
    election_timeout_s: float = 1.0  # Kafka's default, 1000 ms
    fetch_timeout_s: float = 2.0  # Kafka's default, 2000 ms

    @property
    def deposed_s(self) -> float:
        """A leader gone this long has a successor (and, cut off, has resigned)."""
        return CHECK_QUORUM_FACTOR * self.fetch_timeout_s + 2 * self.election_timeout_s


@dataclass(frozen=True, slots=True)
class LeaderView:
    """What a node that says it leads answers: its id, epoch and high watermark (and, not compared,
    each voter's log end offset as it knows it, -1 when unknown)."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voter_ends: tuple[tuple[int, int], ...] = field(default=(), compare=False)

    def committed_on(self, node: int) -> int:
        """How far `node`'s log is known to hold the committed log (never truncated below): its log
        end as this leader knows it, capped at the high watermark; 0 when unknown."""
        end = dict(self.voter_ends).get(node, -1)
        return max(0, min(end, self.high_watermark))


def describe_quorum_request() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(
        topics=(
            DescribeQuorumRequestTopicData(
                topic_name=METADATA_TOPIC, partitions=(DescribeQuorumRequestPartitionData(partition_index=0),)
            ),
        )
    )


def leader_view(response: DescribeQuorumResponse) -> LeaderView | None:
    """The leader's view in a DescribeQuorum answer; None for any error (a node that does not lead)."""
    if response.error_code != ErrorCode.NONE:
        return None
    for topic in response.topics:
        for partition in topic.partitions:
            if topic.topic_name == METADATA_TOPIC and partition.partition_index == 0:
                if partition.error_code != ErrorCode.NONE or partition.leader_id < 0:
                    return None
                ends = tuple((voter.replica_id, voter.log_end_offset) for voter in partition.current_voters)
                return LeaderView(partition.leader_id, partition.leader_epoch, partition.high_watermark, ends)
    return None


def pre_vote_request(cluster: str, node: int, candidate: int, epoch: int) -> VoteRequest:
    """A pre-vote (Vote v2, KIP-996) asking `node` for voter `candidate` in `epoch`, whose log is
    behind any log holding a batch (`STALE_LOG`: it ends at offset 0 with epoch 0)."""
    last_offset, last_epoch = STALE_LOG
    partition = VoteRequestPartitionData(
        partition_index=0,
        candidate_epoch=epoch,
        candidate_id=candidate,
        last_offset_epoch=last_epoch,
        last_offset=last_offset,
        pre_vote=True,
    )
    return VoteRequest(
        cluster_id=cluster,
        voter_id=node,
        topics=(VoteRequestTopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),),
    )


def vote_answer(response: VoteResponse) -> tuple[int, int, bool]:
    """(error, the epoch the node named, granted) of a Vote answer (a top-level error first)."""
    if response.error_code != ErrorCode.NONE:
        return response.error_code, -1, False
    for topic in response.topics:
        for partition in topic.partitions:
            if topic.topic_name == METADATA_TOPIC and partition.partition_index == 0:
                return partition.error_code, partition.leader_epoch, partition.vote_granted
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, False


def newest_leader(views: list[LeaderView | None]) -> LeaderView | None:
    """The leader of the highest epoch among the answers (see the module rules)."""
    leaders = [view for view in views if view is not None]
    return max(leaders, key=lambda view: view.leader_epoch) if leaders else None


@dataclass
class Failover:
    """One controller fault's measurement (times: seconds since the fleet started)."""

    at: float
    node: int
    fault: str  # "kill", "pause", "cut"
    role: str  # LEADER or FOLLOWER: the node's when the fault began
    leader: LeaderView | None  # the leader before the fault
    new_leader: LeaderView | None = None
    elected_at: float | None = None
    served_at: float | None = None
    closed: bool = False

    @property
    def elected_s(self) -> float | None:
        return None if self.elected_at is None else self.elected_at - self.at

    @property
    def served_s(self) -> float | None:
        return None if self.served_at is None else self.served_at - self.at

    @property
    def done(self) -> bool:
        return self.closed or (self.served_at is not None and (self.role != LEADER or self.elected_at is not None))


@dataclass
class FailoverClock:
    """The measurements in progress (usually one: the fleet applies one controller fault at a time)."""

    open: list[Failover] = field(default_factory=list)

    def begin(self, at: float, node: int, fault: str, role: str, leader: LeaderView | None) -> Failover:
        failover = Failover(at, node, fault, role, leader)
        self.open.append(failover)
        return failover

    def leader_seen(self, view: LeaderView, t: float) -> list[Failover]:
        """A round of DescribeQuorum answers at `t` named `view`; the measurements it completed."""
        for failover in self.open:
            if failover.role == LEADER and failover.elected_at is None and t >= failover.at:
                before = -1 if failover.leader is None else failover.leader.leader_epoch
                if view.leader_epoch > before:
                    failover.new_leader, failover.elected_at = view, t
        return self._finished()

    def served(self, node: int | None, t: float) -> list[Failover]:
        """A broker's request was answered at `t` by `node` (None: a controller the fleet did not
        start); the measurements it completed."""
        for failover in self.open:
            elsewhere = failover.role != LEADER or node != failover.node
            if failover.served_at is None and t >= failover.at and elsewhere:
                failover.served_at = t
        return self._finished()

    def close(self, failover: Failover) -> list[Failover]:
        """End `failover`'s measurement with what is known (its bound passed, or the run ended)."""
        failover.closed = True
        return self._finished()

    def close_all(self) -> list[Failover]:
        for failover in self.open:
            failover.closed = True
        return self._finished()

    def _finished(self) -> list[Failover]:
        finished = [failover for failover in self.open if failover.done]
        self.open = [failover for failover in self.open if not failover.done]
        return finished


def cluster_id(seed: int) -> str:
    """The cluster id the fleet formats its quorum with: Kafka's form (a version 4 UUID in URL-safe
    base64, 22 characters, never starting with '-'), drawn from the seed, so a run replays."""
    rng = random.Random(f"{seed}:cluster-id")
    while True:
        raw = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-"):
            return text
