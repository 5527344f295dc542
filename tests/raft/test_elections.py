"""Elections in the Raft core: votes, pre-votes (KIP-996), what is persisted and when, restarts."""

from __future__ import annotations

import random
from collections.abc import Sequence

from controller.raft import (
    AppendBatches,
    BecomeLeader,
    ElectionState,
    Epoch,
    EpochStart,
    LeaderChangeRecord,
    LogFlushed,
    LogView,
    NodeId,
    NotLeader,
    PersistQuorumState,
    RaftNode,
    Resign,
    SendResponse,
    StopLeading,
    Tick,
)
from controller.raft.leader import Leader
from controller.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    Request,
    VoteRequest,
    VoteResponse,
)
from controller.raft.node import QuorumState
from controller.raft.state import Candidate, Follower, Prospective, Resigned, Unattached
from protocol.error_codes import ErrorCode

from .helpers import answer, ask, config, elect, of_type, reply, requests, started
from .simnode import TIMING

CLUSTER = "test-cluster"
ELECTION_MS = TIMING["election_timeout_ms"]
FETCH_MS = TIMING["fetch_timeout_ms"]


def vote_request(candidate: int, epoch: int, last_epoch: int, last_offset: int, pre_vote: bool = False) -> VoteRequest:
    return VoteRequest(
        CLUSTER, Epoch(epoch), NodeId(candidate), NodeId(-1), Epoch(last_epoch), last_offset, pre_vote=pre_vote
    )


def state_of(node: RaftNode) -> QuorumState:
    """The node's state, as mypy would not narrow it across calls."""
    return node.state


def granted(actions: Sequence[object], correlation_id: int = 1000) -> bool:
    response = answer(actions, correlation_id)
    assert isinstance(response, VoteResponse)
    assert response.error == ErrorCode.NONE, response
    return response.vote_granted


def test_a_vote_goes_only_to_a_log_at_least_as_up_to_date() -> None:
    log = LogView.recovered(10, (EpochStart(Epoch(1), 0), EpochStart(Epoch(2), 4)))  # ends at (10, epoch 2)
    cases = {
        (2, 9): False,  # same last epoch, shorter
        (1, 50): False,  # longer, but an older last epoch
        (2, 10): True,
        (3, 1): True,  # a newer last epoch wins over length
    }
    for (last_epoch, last_offset), expected in cases.items():
        for pre_vote in (False, True):
            node, _ = started(1, ElectionState(Epoch(2)), log)
            actions = ask(node, 10, 2, vote_request(2, 4 if not pre_vote else 3, last_epoch, last_offset, pre_vote))
            assert granted(actions) is expected, (last_epoch, last_offset, pre_vote)
    # the candidate this node voted for, asking again once the node's log has grown past its own
    # (under the epoch's leader: Kafka would grant it again)
    node, _ = started(1, ElectionState(Epoch(2), None, NodeId(2)), log)
    assert not granted(ask(node, 10, 2, vote_request(2, 2, 1, 3)))


def test_a_vote_is_persisted_before_it_is_answered() -> None:
    node, _ = started(1, ElectionState(Epoch(2)))
    actions = ask(node, 10, 2, vote_request(2, 3, 0, 0), correlation_id=7)
    assert granted(actions, 7)
    persisted = [index for index, action in enumerate(actions) if isinstance(action, PersistQuorumState)]
    [response_at] = [index for index, action in enumerate(actions) if isinstance(action, SendResponse)]
    assert persisted and persisted[-1] < response_at
    last = actions[persisted[-1]]
    assert isinstance(last, PersistQuorumState)
    assert last.election == ElectionState(Epoch(3), None, NodeId(2))


def test_one_vote_per_epoch_even_across_a_restart() -> None:
    voter, _ = started(3, ElectionState(Epoch(2)))
    actions = ask(voter, 10, 1, vote_request(1, 3, 0, 0))
    assert granted(actions)
    assert not granted(ask(voter, 11, 2, vote_request(2, 3, 0, 0)))
    # restarted from what it persisted (the quorum-state file), nothing else
    [*_, last] = of_type(actions, PersistQuorumState)
    restarted = RaftNode(config(3), random.Random(1), last.election, voter.log)
    restarted.start(20)
    assert isinstance(restarted.state, Unattached) and restarted.state.voted_id == 1
    assert not granted(ask(restarted, 21, 2, vote_request(2, 3, 0, 0)))
    assert granted(ask(restarted, 22, 1, vote_request(1, 3, 0, 0)))  # the same candidate asking again
    assert granted(ask(restarted, 23, 2, vote_request(2, 3, 0, 0, pre_vote=True)))  # pre-votes ignore it
    assert restarted.state.voted_id == 1 and restarted.epoch == 3


def test_a_pre_vote_bumps_no_epoch_and_persists_nothing() -> None:
    node, _ = started(1, ElectionState(Epoch(3), NodeId(2)))
    assert isinstance(node.state, Follower)
    actions = node.handle(FETCH_MS, Tick())  # the leader was never heard from
    assert isinstance(state_of(node), Prospective) and node.epoch == 3
    pre_votes = requests(actions, VoteRequest)
    assert sorted(send.destination for send, _ in pre_votes) == [2, 3]
    assert all(request.pre_vote and request.candidate_epoch == 3 for _, request in pre_votes)
    assert not of_type(actions, PersistQuorumState)
    for send, _ in pre_votes:
        actions = reply(node, FETCH_MS + 1, send, VoteResponse(ErrorCode.NONE, NodeId(2), Epoch(3), False))
    # lost: back to following the leader it knew, in the same epoch, nothing written
    assert state_of(node) == Follower(Epoch(3), NodeId(2), None, FETCH_MS + 1 + FETCH_MS)
    assert not of_type(actions, PersistQuorumState)

    # the voter's side: a granted pre-vote is no vote
    voter, _ = started(2, ElectionState(Epoch(3)))
    actions = ask(voter, 5, 1, vote_request(1, 3, 0, 0, pre_vote=True))
    assert granted(actions) and not of_type(actions, PersistQuorumState)
    assert granted(ask(voter, 6, 3, vote_request(3, 4, 0, 0)))


def test_a_won_pre_vote_leads_to_a_candidacy_in_the_next_epoch() -> None:
    node, _ = started(1, ElectionState(Epoch(3)))
    actions = node.handle(2 * ELECTION_MS, Tick())
    [(send, _), *_] = requests(actions, VoteRequest)
    actions = reply(node, 2 * ELECTION_MS, send, VoteResponse(ErrorCode.NONE, None, Epoch(3), True))
    assert isinstance(node.state, Candidate) and node.epoch == 4
    assert of_type(actions, PersistQuorumState) == [PersistQuorumState(ElectionState(Epoch(4), None, NodeId(1)))]
    votes = requests(actions, VoteRequest)
    assert votes and all(not request.pre_vote and request.candidate_epoch == 4 for _, request in votes)


def test_a_follower_that_heard_from_its_leader_refuses_pre_votes() -> None:
    def pre_vote(node: RaftNode, now: int) -> bool:
        return granted(ask(node, now, 3, vote_request(3, 3, 0, 0, pre_vote=True), correlation_id=now), now)

    node, actions = started(1, ElectionState(Epoch(3), NodeId(2)))
    assert pre_vote(node, 1)  # no fetch answered yet
    [(fetch, _)] = requests(actions, FetchRequest)
    reply(node, 3, fetch, FetchResponse(ErrorCode.NONE, NodeId(2), Epoch(3)))
    assert not pre_vote(node, 4)
    assert not pre_vote(node, 2 + FETCH_MS)
    node.handle(3 + FETCH_MS, Tick())  # its fetch timeout: Prospective, which grants pre-votes
    assert isinstance(node.state, Prospective)
    assert pre_vote(node, 4 + FETCH_MS)


def test_leaders_refuse_votes_in_their_epoch() -> None:
    node, _ = started(1)
    elect(node, 0)
    for pre_vote in (False, True):
        assert not granted(ask(node, 500, 2, vote_request(2, node.epoch, 0 if not pre_vote else 1, 1, pre_vote)))


def test_the_election_timeout_is_uniform_in_t_to_2t() -> None:
    timeouts = []
    for seed in range(300):
        node, _ = started(1, seed=seed)
        assert isinstance(node.state, Unattached) and node.state.election_deadline_ms is not None
        timeouts.append(node.state.election_deadline_ms)
    assert min(timeouts) >= ELECTION_MS and max(timeouts) < 2 * ELECTION_MS
    assert min(timeouts) < ELECTION_MS * 1.1 and max(timeouts) > ELECTION_MS * 1.9


def test_becoming_leader_persists_first_and_appends_the_leader_change_first() -> None:
    node, _ = started(1)
    actions = elect(node, 0)
    persisted = of_type(actions, PersistQuorumState)[-1]
    # a leader's quorum-state names itself leader and no vote (Kafka's withElectedLeader: votedId -1)
    assert persisted.election == ElectionState(Epoch(1), NodeId(1), None)
    [become] = of_type(actions, BecomeLeader)
    assert become == BecomeLeader(Epoch(1), 0)
    at = actions.index(become)
    assert actions.index(persisted) < at
    first = actions[at + 1]
    assert isinstance(first, AppendBatches)
    [batch] = first.batches
    assert (batch.base_offset, batch.last_offset, batch.epoch) == (0, 0, 1)
    record = batch.payload
    assert isinstance(record, LeaderChangeRecord)
    assert record.leader_id == 1 and record.voters == (1, 2, 3) and 1 in record.granting_voters
    assert node.log.end_offset == 1


def test_a_sole_voter_leads_at_once() -> None:
    node, actions = started(1, voters={1})
    assert node.is_leader and node.epoch == 1
    assert of_type(actions, BecomeLeader) == [BecomeLeader(Epoch(1), 0)]
    appended = node.append(1, 1, 2, "records")
    assert not isinstance(appended, NotLeader)
    assert (appended.batch.base_offset, appended.batch.last_offset) == (1, 2)
    node.handle(2, LogFlushed(3))
    assert node.high_watermark == 3


def test_a_restarted_leader_resigns_its_epoch() -> None:
    node, actions = started(1, ElectionState(Epoch(3), NodeId(1), NodeId(1)))
    assert isinstance(node.state, Resigned) and node.epoch == 3
    assert sorted(send.destination for send, _ in requests(actions, EndQuorumEpochRequest)) == [2, 3]
    assert not of_type(actions, BecomeLeader)
    assert not granted(ask(node, 1, 2, vote_request(2, 3, 2, 5)))
    assert isinstance(node.append(1, 3, 1), NotLeader)
    node.handle(2 * ELECTION_MS, Tick())
    assert node.epoch == 4 and not isinstance(state_of(node), Resigned)
    assert node.persisted is not None and node.persisted.epoch == 4


def test_a_leader_asked_to_resign_sends_end_quorum_epoch_to_the_others() -> None:
    """Kafka's graceful shutdown: the leader resigns its epoch (no vote for it, no appends) and
    tells the other voters, naming its successors, so they need not wait out their fetch timeout."""
    node, _ = started(1)
    elect(node, 0)
    epoch = node.epoch
    assert node.handle(1, Resign(epoch + 1)) == [] and node.is_leader  # another epoch: nothing
    actions = node.handle(2, Resign(epoch))
    assert isinstance(node.state, Resigned) and node.epoch == epoch
    sent = requests(actions, EndQuorumEpochRequest)
    assert sorted(send.destination for send, _ in sent) == [2, 3]
    assert all(request.leader_epoch == epoch and request.leader_id == 1 for _, request in sent)
    assert isinstance(node.append(3, epoch, 1), NotLeader)
    follower, _ = started(2)
    assert follower.handle(1, Resign(follower.epoch)) == [] and not isinstance(follower.state, Resigned)


def test_a_restarted_candidate_stands_again_in_its_epoch() -> None:
    node, actions = started(1, ElectionState(Epoch(3), None, NodeId(1)))
    assert isinstance(node.state, Candidate) and node.epoch == 3
    assert all(request.candidate_epoch == 3 and not request.pre_vote for _, request in requests(actions, VoteRequest))


def test_a_higher_epoch_in_a_response_ends_a_leadership() -> None:
    node, _ = started(1)
    actions = elect(node, 0)
    [(send, _), *_] = requests(actions, BeginQuorumEpochRequest)
    actions = reply(node, 300, send, BeginQuorumEpochResponse(ErrorCode.NONE, None, Epoch(5)))
    assert isinstance(node.state, Unattached) and node.epoch == 5
    assert actions[0] == PersistQuorumState(ElectionState(Epoch(5)))
    assert StopLeading(Epoch(1)) in actions
    assert node.append(301, 1, 1) == NotLeader(Epoch(5), None)


def test_a_higher_epoch_in_a_request_ends_a_leadership_before_the_answer() -> None:
    node, _ = started(1)
    elect(node, 0)
    actions = ask(node, 300, 2, vote_request(2, 5, 1, 1), correlation_id=9)
    assert node.epoch == 5 and not node.is_leader
    assert StopLeading(Epoch(1)) in actions
    persisted = [index for index, action in enumerate(actions) if isinstance(action, PersistQuorumState)]
    assert persisted[0] < actions.index(StopLeading(Epoch(1)))
    assert granted(actions, 9)
    assert node.persisted == ElectionState(Epoch(5), None, NodeId(2))


def test_begin_quorum_epoch_is_repeated_until_acknowledged() -> None:
    node, _ = started(1)
    actions = elect(node, 0)
    sends = requests(actions, BeginQuorumEpochRequest)
    assert sorted(send.destination for send, _ in sends) == [2, 3]
    to_two = next(send for send, _ in sends if send.destination == 2)
    assert isinstance(node.state, Leader)
    due = node.state.begin_epoch_due_ms
    reply(node, due - 1, to_two, BeginQuorumEpochResponse(ErrorCode.NONE, NodeId(1), node.epoch))
    later = node.handle(due, Tick())
    assert [send.destination for send, _ in requests(later, BeginQuorumEpochRequest)] == [3]
    assert node.state.begin_epoch_due_ms == due + FETCH_MS // 2


def test_end_quorum_epoch_starts_the_first_successor_at_once() -> None:
    for node_id, successors, expected_wait in ((2, (2, 3), 0), (3, (2, 3), 50), (3, (2,), 100)):
        node, _ = started(node_id, ElectionState(Epoch(2), NodeId(1)))
        request = EndQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(2), tuple(NodeId(s) for s in successors))
        actions = ask(node, 10, 1, request)
        if expected_wait == 0:
            assert isinstance(node.state, Prospective), node.state  # polled at once
            assert requests(actions, VoteRequest)
        else:
            assert isinstance(node.state, Follower) and node.state.fetch_deadline_ms == 10 + expected_wait


def test_voter_only_and_epoch_errors() -> None:
    node, _ = started(1, ElectionState(Epoch(4)))
    cases: list[tuple[Request, ErrorCode]] = [
        (vote_request(2, 3, 0, 0), ErrorCode.FENCED_LEADER_EPOCH),
        (vote_request(9, 5, 0, 0), ErrorCode.INCONSISTENT_VOTER_SET),
        (vote_request(2, 5, 5, 0), ErrorCode.INVALID_REQUEST),  # a last epoch not below the candidate's
        (
            VoteRequest("another-cluster", Epoch(5), NodeId(2), NodeId(1), Epoch(0), 0),
            ErrorCode.INCONSISTENT_CLUSTER_ID,
        ),
        (VoteRequest(CLUSTER, Epoch(5), NodeId(2), NodeId(3), Epoch(0), 0), ErrorCode.INVALID_VOTER_KEY),
        (BeginQuorumEpochRequest(CLUSTER, NodeId(9), Epoch(5), NodeId(1)), ErrorCode.INCONSISTENT_VOTER_SET),
    ]
    for index, (request, error) in enumerate(cases):
        response = answer(ask(node, 10 + index, 2, request, correlation_id=index), index)
        assert response.error == error, (request, response)
    observer, _ = started(4)
    response = answer(ask(observer, 1, 2, vote_request(2, 5, 0, 0)), 1000)
    assert response.error == ErrorCode.INCONSISTENT_VOTER_SET
