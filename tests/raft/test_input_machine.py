"""Any request or answer, in any state, at any time: the Raft core answers or ignores, never raises.

A Hypothesis state machine drives one node (a voter of three or five, a sole voter, or an
observer) from a recovered start through whatever its peers' messages make of it: requests
with values near the node's own (its epoch -1/+0/+1/+1000, ids of itself, the voters, an
observer, -1, int32 max; offsets around its log and int64 max) or anywhere in the wire's
ranges, answers to the requests it sent (mostly plausible, often not), ticks, flushes, appends
and snapshots. After every step:
- nothing raised (`RaftNode.handle` re-raises after restoring the node; no input may get there);
- a request answered with an error changed nothing: epoch, leader, vote, state, log view, high
  watermark, persisted election, and no `PersistQuorumState` was asked;
- Raft's invariants as one node sees them: the epoch and the persisted epoch never go back and
  never pass `MAX_EPOCH`; the high watermark never goes back nor passes the log's end; an
  epoch's leader and vote, once known, stay; a vote granted is persisted before its answer;
  a leader is a voter and leads as itself.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from controller.raft import (
    Action,
    Batch,
    ElectionState,
    Epoch,
    EpochStart,
    InstallSnapshot,
    LogFlushed,
    LogView,
    NodeId,
    OffsetAndEpoch,
    PersistQuorumState,
    RaftConfig,
    RaftNode,
    RequestReceived,
    Resign,
    ResponseReceived,
    SendRequest,
    SendResponse,
    SnapshotCreated,
    SnapshotInstalled,
    Tick,
)
from controller.raft.ids import MAX_EPOCH
from controller.raft.leader import Leader
from controller.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Request,
    Response,
    VoteRequest,
    VoteResponse,
)
from protocol.error_codes import ErrorCode

from .simnode import TIMING

CLUSTER = "test-cluster"
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
ERRORS = [
    ErrorCode.NONE,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.INCONSISTENT_VOTER_SET,
    ErrorCode.INVALID_REQUEST,
    ErrorCode.INCONSISTENT_CLUSTER_ID,
    ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.SNAPSHOT_NOT_FOUND,
    ErrorCode.POSITION_OUT_OF_RANGE,
    ErrorCode.UNKNOWN_SERVER_ERROR,
]
SETUPS = {  # node id, voters
    "one of three": (1, (1, 2, 3)),
    "one of five": (2, (1, 2, 3, 4, 5)),
    "sole voter": (1, (1,)),
    "observer": (9, (1, 2, 3)),
}


def recovered_log(draw: st.DrawFn, epoch: int) -> LogView:
    """A flushed log whose batches' epochs do not pass `epoch`, with a snapshot sometimes."""
    epochs: list[EpochStart] = []
    offset = draw(st.sampled_from([0, 0, 5, 10]))
    snapshot = OffsetAndEpoch(offset, Epoch(min(1, epoch))) if offset else None
    for log_epoch in sorted(draw(st.sets(st.integers(1, max(1, epoch)), max_size=3))):
        if log_epoch <= epoch and (snapshot is None or log_epoch >= snapshot.epoch):
            epochs.append(EpochStart(Epoch(log_epoch), offset))
            offset += draw(st.integers(1, 6))
    return LogView(snapshot.offset if snapshot else 0, offset, offset, tuple(epochs), snapshot)


class RaftInputs(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.node: RaftNode
        self.now = 0
        self.sent: list[SendRequest] = []  # what the node asked of its peers (an answer may come)
        self.installing: InstallSnapshot | None = None
        self.epoch = 0
        self.persisted_epoch = 0
        self.last_persisted: ElectionState | None = None
        self.high_watermark: int | None = None
        self.known: dict[int, tuple[int | None, int | None]] = {}  # epoch -> (leader, vote)
        self.correlation = 10_000

    # ------------------------------------------------------------------ set-up
    @initialize(setup=st.sampled_from(sorted(SETUPS)), data=st.data())
    def start(self, setup: str, data: st.DataObject) -> None:
        node_id, voters = SETUPS[setup]
        epoch = data.draw(st.integers(0, 6), label="epoch")
        leader = data.draw(st.sampled_from([None, *voters]), label="leader")
        voted = data.draw(st.sampled_from([None, *voters]), label="voted")
        log = data.draw(st.composite(lambda draw: recovered_log(draw, epoch))(), label="log")
        config = RaftConfig(NodeId(node_id), frozenset(NodeId(v) for v in voters), CLUSTER, **TIMING)
        election = ElectionState(
            Epoch(epoch), None if leader is None else NodeId(leader), None if voted is None else NodeId(voted)
        )
        self.node = RaftNode(config, random.Random(data.draw(st.integers(0, 9))), election, log)
        self.last_persisted, self.persisted_epoch = election, epoch
        self._take(self.node.start(0))
        self._observe()

    # ------------------------------------------------------------------ what peers send
    @rule(data=st.data())
    def request(self, data: st.DataObject) -> None:
        node = self.node
        self._take(node.handle(self.now, Tick()))  # the timers first: the request alone is judged
        self._observe()
        before = self._seen()
        request = data.draw(requests_near(node), label="request")
        source = data.draw(ids_near(node), label="source")
        self.correlation += 1
        actions = node.handle(self.now, RequestReceived(NodeId(source), self.correlation, request))
        answers = [a.response for a in actions if isinstance(a, SendResponse) and a.correlation_id == self.correlation]
        if answers and answers[0].error != ErrorCode.NONE:
            assert self._seen() == before, (request, answers[0])
            assert not any(isinstance(a, PersistQuorumState) for a in actions), request
        self._take(actions, request)
        self._observe()

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def answer(self, data: st.DataObject) -> None:
        send = data.draw(st.sampled_from(self.sent), label="answered")
        response = data.draw(answers_to(self.node, send.request), label="answer")
        correlation = send.correlation_id if data.draw(st.booleans()) else data.draw(st.integers(0, 50))
        self._take(self.node.handle(self.now, ResponseReceived(send.destination, correlation, response)))
        self._observe()

    # ------------------------------------------------------------------ the shell and the clock
    @rule(delta=st.sampled_from([0, 1, 5, 20, 60, 150, 400, 3000]))
    def tick(self, delta: int) -> None:
        self.now += delta
        self._take(self.node.handle(self.now, Tick()))
        self._observe()

    @rule()
    def flush(self) -> None:
        self._take(self.node.handle(self.now, LogFlushed(self.node.log.end_offset)))
        self._observe()

    @precondition(lambda self: isinstance(self.node.state, Leader))
    @rule(records=st.integers(1, 4))
    def append(self, records: int) -> None:
        appended = self.node.append(self.now, self.node.epoch, records)
        actions = getattr(appended, "actions", ())
        self._take(list(actions))
        self._observe()

    @rule(later=st.booleans())
    def resign(self, later: bool) -> None:
        """The shell stopping the node (a graceful shutdown), in its epoch or a later one."""
        self._take(self.node.handle(self.now, Resign(Epoch(self.node.epoch + later))))
        self._observe()

    @precondition(lambda self: self.installing is not None)
    @rule()
    def snapshot_installed(self) -> None:
        assert self.installing is not None
        snapshot, self.installing = self.installing.snapshot_id, None
        if isinstance(self.node.state, Leader):
            return  # the shell never finishes an install under a leader: it is elected only after
        self._take(self.node.handle(self.now, SnapshotInstalled(snapshot)))
        self._observe()

    @precondition(lambda self: self.node.high_watermark is not None)
    @rule()
    def snapshot_created(self) -> None:
        node = self.node
        hw = node.high_watermark
        assert hw is not None
        offset = min(hw, node.log.end_offset)
        epoch = node.log.epoch_at(offset - 1) if offset > node.log.start_offset else None
        if epoch is None or offset <= node.log.start_offset:
            return
        self._take(node.handle(self.now, SnapshotCreated(OffsetAndEpoch(offset, epoch))))
        self._observe()

    # ------------------------------------------------------------------ bookkeeping and invariants
    def _take(self, actions: list[Action], request: Request | None = None) -> None:
        for action in actions:
            if isinstance(action, SendRequest):
                self.sent = [*self.sent[-7:], action]
            elif isinstance(action, InstallSnapshot):
                self.installing = action
            elif isinstance(action, PersistQuorumState):
                assert action.election.epoch >= self.persisted_epoch, action
                self.persisted_epoch = action.election.epoch
                self.last_persisted = action.election
            elif isinstance(action, SendResponse) and isinstance(request, VoteRequest) and not request.pre_vote:
                response = action.response
                if isinstance(response, VoteResponse) and response.vote_granted:
                    # a granted vote is durable before its answer leaves
                    vote = self.last_persisted
                    assert vote is not None and (vote.epoch, vote.voted_id) == (
                        response.leader_epoch,
                        request.candidate_id,
                    )

    def _seen(self) -> tuple[Any, ...]:
        node = self.node
        return (node.election(), node.persisted, type(node.state).__name__, node.log, node.high_watermark)

    def _observe(self) -> None:
        node = self.node
        assert self.epoch <= node.epoch <= MAX_EPOCH, (self.epoch, node.state)
        if node.epoch > self.epoch:
            self.epoch = node.epoch
        hw = node.high_watermark
        if self.high_watermark is not None:
            assert hw is not None and hw >= self.high_watermark, (self.high_watermark, hw)
        self.high_watermark = hw
        assert hw is None or hw <= node.log.end_offset, (hw, node.log)
        leader, vote = self.known.get(node.epoch, (None, None))
        if leader is not None and node.leader_id is not None:
            assert node.leader_id == leader, (node.epoch, leader, node.state)
        if vote is not None and node.voted_id is not None:
            assert node.voted_id == vote, (node.epoch, vote, node.state)
        self.known[node.epoch] = (
            leader if leader is not None else node.leader_id,
            vote if vote is not None else node.voted_id,
        )
        if isinstance(node.state, Leader):
            assert node.config.is_voter and node.leader_id == node.node_id

    @invariant()
    def never_above_the_last_epoch(self) -> None:
        assert self.node.epoch <= MAX_EPOCH


# ---------------------------------------------------------------------- hostile and plausible values
def ids_near(node: RaftNode) -> st.SearchStrategy[int]:
    voters = sorted(node.config.voters)
    return st.one_of(
        st.sampled_from([node.node_id, *voters, 9, 42, -1, -2, INT32_MAX]),
        st.integers(-(2**31), INT32_MAX),
    )


def epochs_near(node: RaftNode) -> st.SearchStrategy[Epoch]:
    epoch = node.epoch
    near = [epoch - 1, epoch, epoch, epoch + 1, epoch + 1, epoch + 1000, -1, 0, MAX_EPOCH, INT32_MAX]
    return st.one_of(st.sampled_from(near), st.integers(-(2**31), INT32_MAX)).map(Epoch)


def offsets_near(node: RaftNode) -> st.SearchStrategy[int]:
    log = node.log
    hw = node.high_watermark or 0
    near = [-1, 0, log.start_offset, log.end_offset, log.end_offset + 1, max(0, log.end_offset - 1), hw, INT64_MAX]
    return st.one_of(st.sampled_from(near), st.integers(-(2**63), INT64_MAX))


def clusters() -> st.SearchStrategy[str | None]:
    return st.sampled_from([None, CLUSTER, CLUSTER, "another-cluster", ""])


@st.composite
def requests_near(draw: st.DrawFn, node: RaftNode) -> Request:
    ids, epochs, offsets = ids_near(node), epochs_near(node), offsets_near(node)
    kind = draw(st.sampled_from(["vote", "begin", "end", "fetch", "fetch", "snapshot"]))
    cluster = draw(clusters())
    if kind == "vote":
        return VoteRequest(
            cluster,
            draw(epochs),
            NodeId(draw(ids)),
            NodeId(draw(ids)),
            draw(epochs),
            draw(offsets),
            draw(st.booleans()),
        )
    if kind == "begin":
        return BeginQuorumEpochRequest(cluster, NodeId(draw(ids)), draw(epochs), NodeId(draw(ids)))
    if kind == "end":
        successors = tuple(NodeId(i) for i in draw(st.lists(ids, max_size=4)))
        return EndQuorumEpochRequest(cluster, NodeId(draw(ids)), draw(epochs), successors)
    if kind == "fetch":
        return FetchRequest(
            cluster,
            NodeId(draw(ids)),
            draw(epochs),
            draw(offsets),
            draw(epochs),
            draw(offsets),
            draw(st.sampled_from([0, 0, 50, 500, -1, INT32_MAX])),
        )
    snapshot = node.log.snapshot or OffsetAndEpoch(draw(offsets), draw(epochs))
    if draw(st.booleans()):
        snapshot = OffsetAndEpoch(draw(offsets), draw(epochs))
    return FetchSnapshotRequest(cluster, NodeId(draw(ids)), draw(epochs), snapshot, draw(offsets))


@st.composite
def answers_to(draw: st.DrawFn, node: RaftNode, request: Request) -> Response:
    """Mostly what a peer would answer to `request`, often with any value instead."""
    ids = st.one_of(st.none(), ids_near(node).map(NodeId))
    plausible = draw(st.booleans())
    error = ErrorCode.NONE if plausible and draw(st.booleans()) else draw(st.sampled_from(ERRORS))
    epoch = Epoch(getattr(request, "candidate_epoch", node.epoch)) if plausible else draw(epochs_near(node))
    leader = None if plausible else draw(ids)
    if isinstance(request, VoteRequest):
        return VoteResponse(error, leader, epoch, draw(st.booleans()))
    if isinstance(request, BeginQuorumEpochRequest):
        return BeginQuorumEpochResponse(error, leader, epoch)
    if isinstance(request, EndQuorumEpochRequest):
        return EndQuorumEpochResponse(error, leader, epoch)
    offsets = offsets_near(node)
    if isinstance(request, FetchSnapshotRequest):
        snapshot = (
            request.snapshot_id
            if plausible
            else draw(st.one_of(st.none(), st.builds(OffsetAndEpoch, offsets, epochs_near(node))))
        )
        return FetchSnapshotResponse(error, node.leader_id if plausible else leader, epoch, snapshot)
    assert isinstance(request, FetchRequest)
    leader = leader if not plausible else draw(st.sampled_from(sorted(node.config.voters)))
    batches: tuple[Batch, ...] = ()
    if draw(st.booleans()):
        base = request.fetch_offset if plausible else draw(offsets)
        sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
        batch_epoch = min(epoch, max(0, node.log.last_epoch)) if plausible else draw(epochs_near(node))
        out = []
        for size in sizes:
            out.append(Batch(base, base + size - 1, Epoch(batch_epoch)))
            base += size
        batches = tuple(out)
    diverging = draw(st.one_of(st.none(), st.builds(OffsetAndEpoch, offsets, epochs_near(node))))
    snapshot_id = draw(st.one_of(st.none(), st.builds(OffsetAndEpoch, offsets, epochs_near(node))))
    if plausible and draw(st.booleans()):
        diverging = snapshot_id = None
    return FetchResponse(
        error,
        leader,
        epoch,
        high_watermark=draw(offsets),
        log_start_offset=draw(offsets),
        diverging_epoch=diverging,
        snapshot_id=snapshot_id,
        records=batches,
    )


TestRaftInputs = RaftInputs.TestCase
# More runs than the suite's default profile: one run costs about 35 ms, and 25 of them missed
# a self-claim that stops a node in some seeds (100 found every planted refusal bug tried).
TestRaftInputs.settings = settings(settings.default, max_examples=max(100, settings.default.max_examples))
