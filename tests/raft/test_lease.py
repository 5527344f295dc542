"""The leader's lease (`Leader.lease_holds`): while it holds, no other leader can have been
elected. Driven through the pure core at Kafka's default timeouts: three voters, each message
delayed 0-20 ms (from the seed), the leader cut off from both followers at a chosen moment while their
fetches are held (nothing new to send); the followers' timers run from the last answer they
received, so the old leader's lease must have ended before either of them leads."""

from __future__ import annotations

import heapq
import random

import pytest

from controller.raft import (
    Action,
    Event,
    LogFlushed,
    NodeId,
    RaftConfig,
    RaftNode,
    RequestReceived,
    ResponseReceived,
    SendRequest,
    SendResponse,
    Tick,
)
from controller.raft.leader import Leader
from controller.raft.messages import FetchRequest

from .helpers import VOTERS, with_records

FETCH_TIMEOUT_MS = RaftConfig(NodeId(1), VOTERS).fetch_timeout_ms


class Cluster:
    """Three voters at Kafka's default timeouts; `cut` drops everything to and from one node."""

    def __init__(self, seed: int) -> None:
        self.nodes = {
            voter: RaftNode(RaftConfig(voter, VOTERS, "lease-test"), random.Random(seed * 10 + voter))
            for voter in sorted(VOTERS)
        }
        self.rng = random.Random(seed)
        self.now = 0
        self.cut: NodeId | None = None
        #: (arrival ms, sequence, sender, message) in flight
        self.network: list[tuple[int, int, NodeId, SendRequest | SendResponse]] = []
        self.sent = 0
        for voter, node in self.nodes.items():
            self.send(voter, node.start(0))

    def send(self, sender: NodeId, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, SendRequest | SendResponse) and self.cut not in (sender, action.destination):
                self.sent += 1
                heapq.heappush(self.network, (self.now + self.rng.randint(0, 20), self.sent, sender, action))

    def handle(self, voter: NodeId, event: Event) -> None:
        node = self.nodes[voter]
        self.send(voter, node.handle(self.now, event))
        if node.log.flushed_end_offset < node.log.end_offset:  # appends are flushed at once
            self.send(voter, node.handle(self.now, LogFlushed(node.log.end_offset)))

    def step(self) -> None:
        """To the next moment a message arrives or a node has something to do, and do it."""
        moments = [node.next_wakeup_ms(self.now) for node in self.nodes.values()]
        moments.append(self.network[0][0] if self.network else None)
        self.now = max(self.now + 1, min(moment for moment in moments if moment is not None))
        while self.network and self.network[0][0] <= self.now:
            _, _, sender, message = heapq.heappop(self.network)
            if self.cut in (sender, message.destination):
                continue
            if isinstance(message, SendRequest):
                event: Event = RequestReceived(sender, message.correlation_id, message.request)
            else:
                response = with_records(message.response, self.nodes[sender].log)
                event = ResponseReceived(sender, message.correlation_id, response)
            self.handle(message.destination, event)
        for voter, node in self.nodes.items():
            wakeup = node.next_wakeup_ms(self.now)
            if wakeup is not None and wakeup <= self.now:
                self.handle(voter, Tick())

    def leaders(self) -> dict[NodeId, Leader]:
        return {voter: node.state for voter, node in self.nodes.items() if isinstance(node.state, Leader)}


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("cut_ms", [5001, 5137, 5250, 5420, 6003])
def test_no_other_leader_while_the_cut_off_leader_holds_its_lease(seed: int, cut_ms: int) -> None:
    cluster = Cluster(seed)
    while cluster.now < cut_ms:
        cluster.step()
    [(old, state)] = cluster.leaders().items()
    assert len(cluster.nodes[old].parked) >= 1, "a follower's fetch is held when the leader is cut off"
    cluster.cut = old
    old_epoch = state.epoch
    while cluster.now < cut_ms + 5 * FETCH_TIMEOUT_MS:
        cluster.step()
        others = [voter for voter, leader in cluster.leaders().items() if voter != old and leader.epoch > old_epoch]
        if others:
            old_state = cluster.nodes[old].state
            holds = isinstance(old_state, Leader) and old_state.lease_holds(cluster.now, FETCH_TIMEOUT_MS)
            assert not holds, f"node {others[0]} leads from {cluster.now} ms while node {old}'s lease holds"
            return
    pytest.fail("no new leader was elected after the leader was cut off")


def test_a_held_fetch_counts_from_its_arrival() -> None:
    """A follower's fetch held 500 ms (Kafka's most) counts for the lease and check-quorum from when
    it arrived, not from when it was answered."""
    cluster = Cluster(0)
    while cluster.now < 3000:
        cluster.step()
    [(leader_id, _)] = cluster.leaders().items()
    leader = cluster.nodes[leader_id]
    follower = min(voter for voter in VOTERS if voter != leader_id)
    state = leader.state
    assert isinstance(state, Leader)
    # a fetch at the leader's log end, nothing new: held
    request = FetchRequest(
        "lease-test",
        follower,
        state.epoch,
        leader.log.end_offset,
        leader.log.last_epoch,
        high_watermark=state.high_watermark if state.high_watermark is not None else -1,
        max_wait_ms=500,
    )
    arrived = cluster.now + 1
    held = leader.handle(arrived, RequestReceived(follower, 99, request))
    assert not [action for action in held if isinstance(action, SendResponse)]
    due = leader.handle(arrived + 500, Tick())
    answered = [action for action in due if isinstance(action, SendResponse) and action.correlation_id == 99]
    assert answered, "the held fetch is answered at its deadline"
    progress = leader.state.progress[follower]  # type: ignore[union-attr]
    assert progress.last_fetch_ms == arrived
