"""Requests and answers no peer could truly send: refused (or ignored) without a change.

Each case is one that stopped a node or changed it while refusing: a node claimed as leader of
an epoch it does not lead, two leaders of one epoch, epochs past int32, a node asked by
itself, a vote meant for another voter, a snapshot read at a negative position, a fetch naming
the leader's own id, answers naming this node as another epoch's leader. The Hypothesis state
machine (test_input_machine.py) holds the core to the same rules for any input in any state.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.raft import (
    ElectionState,
    Epoch,
    EpochStart,
    LogView,
    NodeId,
    OffsetAndEpoch,
    PersistQuorumState,
    RaftNode,
    Tick,
)
from controller.raft.ids import MAX_EPOCH
from controller.raft.leader import MAX_OBSERVERS, OBSERVER_SESSION_TIMEOUT_MS, Leader
from controller.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    Request,
    VoteRequest,
    VoteResponse,
)
from controller.raft.state import Follower, Prospective
from protocol.error_codes import ErrorCode

from .helpers import answer, ask, elect, of_type, reply, requests, started
from .simnode import TIMING

CLUSTER = "test-cluster"
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Seen:
    """What a refused request must leave as it was."""

    election: ElectionState
    persisted: ElectionState | None
    state: str
    log: LogView
    high_watermark: int | None


def seen(node: RaftNode) -> Seen:
    return Seen(node.election(), node.persisted, type(node.state).__name__, node.log, node.high_watermark)


def sole_leader() -> RaftNode:
    node, _ = started(1, voters={1})
    assert node.is_leader
    return node


def three_voter_leader(epoch: int = 3) -> RaftNode:
    node, _ = started(1, ElectionState(Epoch(epoch - 1)))
    elect(node, 0)
    return node


def refused(node: RaftNode, now: int, source: int, request: Request, error: ErrorCode) -> None:
    node.handle(now, Tick())  # the timers first: the request alone must change nothing
    before = seen(node)
    actions = ask(node, now, source, request)
    response = answer(actions, 1000)
    assert response.error == error, (request, response)
    assert seen(node) == before, request
    assert not of_type(actions, PersistQuorumState)


def test_a_self_claim_of_the_next_epochs_leadership_is_refused_and_the_node_serves_on() -> None:
    """The frame that stopped the Quick start's single node: BeginQuorumEpoch naming the node
    itself as leader of its epoch + 1 (v0 and v1 read alike), and EndQuorumEpoch likewise."""
    node = sole_leader()
    epoch = node.epoch
    for claimed in (epoch + 1, epoch + 1000, MAX_EPOCH, INT32_MAX):
        bqe = BeginQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(claimed), NodeId(-1))
        refused(node, 10, 1, bqe, ErrorCode.INVALID_REQUEST)
        refused(
            node,
            11,
            1,
            BeginQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(claimed), NodeId(1)),
            ErrorCode.INVALID_REQUEST,
        )
        refused(node, 12, 1, EndQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(claimed), ()), ErrorCode.INVALID_REQUEST)
    assert node.is_leader and node.epoch == epoch
    assert node.append(20, epoch, 1).__class__.__name__ == "Appended"  # it still writes


def test_a_leader_refuses_another_leader_of_its_epoch_and_a_self_claim_of_a_later_one() -> None:
    leader = three_voter_leader()
    epoch = leader.epoch
    refused(
        leader, 10, 2, BeginQuorumEpochRequest(CLUSTER, NodeId(2), Epoch(epoch), NodeId(1)), ErrorCode.INVALID_REQUEST
    )
    refused(leader, 11, 2, EndQuorumEpochRequest(CLUSTER, NodeId(2), Epoch(epoch), ()), ErrorCode.INVALID_REQUEST)
    refused(
        leader,
        12,
        1,
        BeginQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(epoch + 1), NodeId(1)),
        ErrorCode.INVALID_REQUEST,
    )
    assert leader.is_leader


def test_a_follower_refuses_its_own_leadership_and_a_second_leader_of_its_epoch() -> None:
    follower, _ = started(2, ElectionState(Epoch(5), NodeId(1)))
    assert isinstance(follower.state, Follower)
    refused(follower, 1, 2, BeginQuorumEpochRequest(CLUSTER, NodeId(2), Epoch(5), NodeId(2)), ErrorCode.INVALID_REQUEST)
    refused(follower, 2, 3, BeginQuorumEpochRequest(CLUSTER, NodeId(3), Epoch(5), NodeId(2)), ErrorCode.INVALID_REQUEST)
    refused(
        follower, 3, 3, EndQuorumEpochRequest(CLUSTER, NodeId(3), Epoch(5), (NodeId(2),)), ErrorCode.INVALID_REQUEST
    )
    # the leader it knows, in its epoch, is what a BeginQuorumEpoch may repeat
    response = answer(ask(follower, 4, 1, BeginQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(5), NodeId(2))), 1000)
    assert response.error == ErrorCode.NONE and follower.leader_id == 1


def test_a_vote_past_the_last_epoch_is_refused_and_one_at_it_leaves_the_node_unable_to_stand() -> None:
    node, _ = started(1, ElectionState(Epoch(4)))
    refused(
        node, 1, 2, VoteRequest(CLUSTER, Epoch(INT32_MAX), NodeId(2), NodeId(1), Epoch(0), 0), ErrorCode.INVALID_REQUEST
    )
    response = answer(ask(node, 2, 2, VoteRequest(CLUSTER, MAX_EPOCH, NodeId(2), NodeId(1), Epoch(0), 0)), 1000)
    assert response.error == ErrorCode.NONE and node.epoch == MAX_EPOCH
    now, stood = 2, False
    for _ in range(20):  # it stands in vain: no candidacy past MAX_EPOCH, and nothing raises
        wake = node.next_wakeup_ms(now)
        assert wake is not None
        now = wake
        node.handle(now, Tick())
        stood = stood or isinstance(node.state, Prospective)
        assert node.epoch == MAX_EPOCH and not node.is_leader
    assert stood


def test_a_node_is_never_asked_by_itself() -> None:
    node, _ = started(1, ElectionState(Epoch(4)))
    vote = VoteRequest(CLUSTER, Epoch(5), NodeId(1), NodeId(1), Epoch(0), 0)
    refused(node, 1, 1, vote, ErrorCode.INVALID_REQUEST)


def test_a_vote_meant_for_another_voter_changes_nothing() -> None:
    """Kafka moves to the candidate's epoch before it sees the voter key; fencer refuses first."""
    node, _ = started(1, ElectionState(Epoch(4), NodeId(2)))
    vote = VoteRequest(CLUSTER, Epoch(5), NodeId(3), NodeId(2), Epoch(0), 0)
    refused(node, 1, 3, vote, ErrorCode.INVALID_VOTER_KEY)
    bqe = BeginQuorumEpochRequest(CLUSTER, NodeId(3), Epoch(6), NodeId(2))
    refused(node, 2, 3, bqe, ErrorCode.INVALID_VOTER_KEY)


def test_a_snapshot_read_at_a_negative_position_is_out_of_range() -> None:
    log = LogView.recovered(12, (EpochStart(Epoch(1), 10),), OffsetAndEpoch(10, Epoch(1)))
    node, _ = started(1, ElectionState(Epoch(1)), log, voters={1})
    assert node.is_leader
    request = FetchSnapshotRequest(CLUSTER, NodeId(5), node.epoch, OffsetAndEpoch(10, Epoch(1)), -1)
    refused(node, 1, 5, request, ErrorCode.POSITION_OUT_OF_RANGE)
    request = FetchSnapshotRequest(CLUSTER, NodeId(5), node.epoch, OffsetAndEpoch(10, Epoch(1)), 0)
    assert answer(ask(node, 2, 5, request), 1000).error == ErrorCode.NONE


def test_a_fetch_naming_the_leaders_own_id_is_refused() -> None:
    node = sole_leader()
    fetch = FetchRequest(CLUSTER, NodeId(1), node.epoch, 0, Epoch(0), -1, 0)
    refused(node, 1, 1, fetch, ErrorCode.INVALID_REQUEST)


def test_an_answer_naming_this_node_leader_of_a_later_epoch_is_ignored() -> None:
    """A follower's fetch answered with 'you lead epoch + 1' (a leader led astray by a spoofed
    BeginQuorumEpoch answers so): Kafka throws; the node ignores it and backs off."""
    follower, actions = started(2, ElectionState(Epoch(3), NodeId(1)))
    [(send, _)] = requests(actions, FetchRequest)
    before = seen(follower)
    actions = reply(follower, 5, send, FetchResponse(ErrorCode.FENCED_LEADER_EPOCH, NodeId(2), Epoch(4)))
    assert seen(follower) == before
    assert not requests(actions, FetchRequest)  # backing off
    assert requests(follower.handle(5 + TIMING["retry_backoff_ms"], Tick()), FetchRequest)


def test_answers_past_the_last_epoch_are_ignored() -> None:
    node, actions = started(1, ElectionState(Epoch(4)))
    now = node.next_wakeup_ms(0)
    assert now is not None
    actions = node.handle(now, Tick())  # prospective: pre-votes out
    [(send, _), *_] = requests(actions, VoteRequest)
    before = seen(node)
    reply(node, now, send, VoteResponse(ErrorCode.NONE, NodeId(2), Epoch(INT32_MAX), False))
    assert seen(node) == before


def test_observers_are_forgotten_after_five_minutes_and_bounded_in_number() -> None:
    node = sole_leader()
    epoch = node.epoch
    for replica in range(100, 100 + MAX_OBSERVERS + 50):
        ask(node, 10, replica, FetchRequest(CLUSTER, NodeId(replica), epoch, 0, Epoch(0), -1, 0))
    state = node.state
    assert isinstance(state, Leader)
    observers = state.observers.active(10)
    assert len(observers) == MAX_OBSERVERS
    assert min(observers) == 150  # the ones that fetched longest ago went first
    ask(node, 20, 7, FetchRequest(CLUSTER, NodeId(7), epoch, 0, Epoch(0), -1, 0))
    assert set(state.observers.active(10 + OBSERVER_SESSION_TIMEOUT_MS + 5)) == {NodeId(7)}
