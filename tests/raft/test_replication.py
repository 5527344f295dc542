"""Replication in the Raft core: the leader's high watermark, divergence, snapshots, held fetches,
appends, and how a leader answers fetches it cannot serve."""

from __future__ import annotations

from controller.raft import (
    AppendBatches,
    Appended,
    Batch,
    ElectionState,
    Epoch,
    EpochStart,
    HighWatermark,
    InstallSnapshot,
    LogFlushed,
    LogView,
    NodeId,
    NotLeader,
    OffsetAndEpoch,
    RaftNode,
    SendResponse,
    SnapshotCreated,
    SnapshotInstalled,
    StopLeading,
    Tick,
    TruncateTo,
)
from controller.raft.messages import (
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    VoteRequest,
)
from protocol.error_codes import ErrorCode

from .helpers import answer, ask, elect, exchange, of_type, reply, requests, started
from .simnode import TIMING

CLUSTER = "test-cluster"


def fetch(replica: int, epoch: int, offset: int, last_epoch: int, hw: int = -1, wait: int = 0) -> FetchRequest:
    return FetchRequest(CLUSTER, NodeId(replica), Epoch(epoch), offset, Epoch(last_epoch), hw, wait)


def fetched(node: RaftNode, now: int, request: FetchRequest, correlation_id: int = 500) -> FetchResponse:
    response = answer(ask(node, now, request.replica_id, request, correlation_id), correlation_id)
    assert isinstance(response, FetchResponse)
    return response


def leader(
    log: LogView | None = None, election: ElectionState | None = None, voters: set[int] | None = None
) -> RaftNode:
    node, _ = started(1, election, log, voters=voters or {1, 2, 3})
    elect(node, 0)
    return node


def test_the_high_watermark_counts_the_leaders_flushed_end_only() -> None:
    node = leader()  # its LeaderChange at offset 0, not flushed yet
    assert fetched(node, 300, fetch(2, 1, 1, 1)).high_watermark == -1
    assert node.high_watermark is None  # the follower has it, the leader's copy is not durable
    actions = node.handle(301, LogFlushed(1))
    assert of_type(actions, HighWatermark) == [HighWatermark(1)]
    assert fetched(node, 302, fetch(3, 1, 1, 1), 501).high_watermark == 1


def test_the_high_watermark_needs_a_majority_of_voters() -> None:
    node = leader(voters={1, 2, 3, 4, 5})
    node.handle(300, LogFlushed(1))
    fetched(node, 301, fetch(2, 1, 1, 1))
    assert node.high_watermark is None  # leader and one follower: 2 of 5
    fetched(node, 302, fetch(6, 1, 1, 1), 501)  # an observer does not count
    assert node.high_watermark is None
    fetched(node, 303, fetch(3, 1, 1, 1), 502)
    assert node.high_watermark == 1


def test_the_high_watermark_waits_for_the_epochs_first_batch() -> None:
    old = LogView.recovered(5, (EpochStart(Epoch(1), 0),))  # five entries of epoch 1, never committed
    node = leader(old, ElectionState(Epoch(1)))
    assert node.epoch == 2 and node.log.end_offset == 6  # the LeaderChange at 5
    node.handle(300, LogFlushed(6))
    fetched(node, 301, fetch(2, 2, 5, 1))  # the follower holds the old entries only
    assert node.high_watermark is None
    actions = node.handle(302, Tick())
    assert not of_type(actions, HighWatermark)
    fetched(node, 303, fetch(2, 2, 6, 2), 501)
    assert node.high_watermark == 6


def test_the_high_watermark_never_goes_back() -> None:
    node = leader()
    node.handle(300, LogFlushed(1))
    fetched(node, 301, fetch(2, 1, 1, 1))
    assert node.high_watermark == 1
    appended = node.append(302, 1, 3)
    assert isinstance(appended, Appended)
    node.handle(303, LogFlushed(4))
    fetched(node, 304, fetch(3, 1, 4, 1), 501)
    assert node.high_watermark == 4
    fetched(node, 305, fetch(2, 1, 1, 1), 502)  # a stale fetch
    assert node.high_watermark == 4


def test_a_diverging_follower_truncates_then_catches_up() -> None:
    # leader: epoch 1 at 0..4, epoch 3 at 5..7; follower: epoch 1 at 0..4, epoch 2 at 5..8
    leader_node = leader(
        LogView.recovered(8, (EpochStart(Epoch(1), 0), EpochStart(Epoch(3), 5))), ElectionState(Epoch(3))
    )
    assert leader_node.epoch == 4
    follower, _ = started(
        2, ElectionState(Epoch(3)), LogView.recovered(9, (EpochStart(Epoch(1), 0), EpochStart(Epoch(2), 5)))
    )
    begin = BeginQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(4), NodeId(2))
    actions = ask(follower, 300, 1, begin)
    seen = exchange({1: leader_node, 2: follower}, 300, {2: actions})
    truncations = of_type(seen[2], TruncateTo)
    assert truncations == [TruncateTo(5)]
    appended = [batch for action in of_type(seen[2], AppendBatches) for batch in action.batches]
    assert appended[0].base_offset == 5
    assert seen[2].index(truncations[0]) < seen[2].index(of_type(seen[2], AppendBatches)[0])
    assert follower.log.end_offset == leader_node.log.end_offset == 9
    assert follower.log.epochs == leader_node.log.epochs
    assert follower.high_watermark == leader_node.high_watermark == 9


def test_a_follower_fetches_again_only_once_its_records_are_flushed() -> None:
    follower, actions = started(2, ElectionState(Epoch(1), NodeId(1)))
    [(send, request)] = requests(actions, FetchRequest)
    assert (request.fetch_offset, request.last_fetched_epoch) == (0, 0)
    records = FetchResponse(
        ErrorCode.NONE, NodeId(1), Epoch(1), high_watermark=0, records_from_offset=0, records=(Batch(0, 2, Epoch(1)),)
    )
    actions = reply(follower, 5, send, records)
    assert of_type(actions, AppendBatches) == [AppendBatches((Batch(0, 2, Epoch(1)),))]
    assert not requests(actions, FetchRequest)  # its fetch offset would count as durable
    assert not requests(follower.handle(6, LogFlushed(2)), FetchRequest)  # partly flushed
    [(_, request)] = requests(follower.handle(7, LogFlushed(3)), FetchRequest)
    assert (request.fetch_offset, request.last_fetched_epoch) == (3, 1)


def test_a_leader_answers_a_diverging_epoch() -> None:
    node = leader(LogView.recovered(8, (EpochStart(Epoch(1), 0), EpochStart(Epoch(3), 5))), ElectionState(Epoch(3)))
    response = fetched(node, 300, fetch(2, 4, 9, 2))
    assert response.diverging_epoch == OffsetAndEpoch(5, Epoch(1))
    assert response.records_from_offset is None
    response = fetched(node, 301, fetch(2, 4, 12, 4), 501)  # past the leader's end
    assert response.diverging_epoch == OffsetAndEpoch(9, Epoch(4))


def test_a_follower_never_truncates_below_its_high_watermark() -> None:
    follower, actions = started(2, ElectionState(Epoch(3), NodeId(1)), LogView.recovered(9, (EpochStart(Epoch(2), 0),)))
    [(send, _)] = requests(actions, FetchRequest)
    actions = reply(follower, 5, send, FetchResponse(ErrorCode.NONE, NodeId(1), Epoch(3), high_watermark=9))
    assert follower.high_watermark == 9
    [(send, _)] = requests(actions, FetchRequest)
    diverging = FetchResponse(ErrorCode.NONE, NodeId(1), Epoch(3), diverging_epoch=OffsetAndEpoch(4, Epoch(2)))
    actions = reply(follower, 7, send, diverging)
    assert not of_type(actions, TruncateTo)  # ignored (Kafka throws): the committed entries stay
    assert (follower.log.end_offset, follower.high_watermark) == (9, 9)
    assert not requests(actions, FetchRequest)  # the leader is backed off, not asked again at once
    assert requests(follower.handle(7 + TIMING["retry_backoff_ms"], Tick()), FetchRequest)


def test_a_follower_behind_the_leaders_log_start_installs_its_snapshot() -> None:
    # the leader's log starts at 10 (a snapshot of epoch 1 below), then epoch 1 at 10..11
    log = LogView.recovered(12, (EpochStart(Epoch(1), 10),), OffsetAndEpoch(10, Epoch(1)))
    leader_node = leader(log, ElectionState(Epoch(1)))
    follower, _ = started(2, ElectionState(Epoch(1)))
    actions = ask(follower, 300, 1, BeginQuorumEpochRequest(CLUSTER, NodeId(1), Epoch(2), NodeId(2)))
    seen = exchange({1: leader_node, 2: follower}, 300, {2: actions})
    assert requests(seen[2], FetchSnapshotRequest)
    [install] = of_type(seen[2], InstallSnapshot)
    assert install.snapshot_id == OffsetAndEpoch(10, Epoch(1))
    assert follower.log.end_offset == 0  # until the shell says it is installed
    actions = follower.handle(301, SnapshotInstalled(install.snapshot_id))
    assert follower.log.start_offset == 10 and follower.high_watermark == 10
    assert HighWatermark(10) in actions
    seen = exchange({1: leader_node, 2: follower}, 302, {2: actions})
    assert follower.log.end_offset == leader_node.log.end_offset == 13


def test_a_newer_epoch_tail_below_the_snapshot_is_replaced_by_it() -> None:
    # the follower led epoch 2 and wrote 5..7 that never committed; the committed log (epoch 1)
    # reaches 12 and the leader's log starts there: Kafka's (epoch, offset) test would refuse
    log = LogView.recovered(14, (EpochStart(Epoch(3), 12),), OffsetAndEpoch(12, Epoch(1)))
    leader_node = leader(log, ElectionState(Epoch(3)))
    follower, _ = started(
        2, ElectionState(Epoch(3)), LogView.recovered(8, (EpochStart(Epoch(1), 0), EpochStart(Epoch(2), 5)))
    )
    actions = ask(follower, 300, 1, BeginQuorumEpochRequest(CLUSTER, NodeId(1), leader_node.epoch, NodeId(2)))
    seen = exchange({1: leader_node, 2: follower}, 300, {2: actions})
    assert [install.snapshot_id for install in of_type(seen[2], InstallSnapshot)] == [OffsetAndEpoch(12, Epoch(1))]


def test_a_snapshot_moves_the_log_start_and_lagging_fetchers_get_it() -> None:
    node = leader()
    node.append(300, 1, 4)
    node.handle(301, LogFlushed(5))
    fetched(node, 302, fetch(2, 1, 5, 1))
    assert node.high_watermark == 5
    node.handle(303, SnapshotCreated(OffsetAndEpoch(5, Epoch(1))))
    assert node.log.start_offset == 5
    response = fetched(node, 304, fetch(3, 1, 2, 1), 501)
    assert response.snapshot_id == OffsetAndEpoch(5, Epoch(1))


def test_a_leader_holds_a_fetch_until_there_is_something_new() -> None:
    node = leader()
    node.handle(300, LogFlushed(1))
    wait = TIMING["fetch_max_wait_ms"]
    assert fetched(node, 301, fetch(2, 1, 1, 1, hw=-1)).high_watermark == 1  # a new high watermark
    assert not ask(node, 302, 2, fetch(2, 1, 1, 1, hw=1, wait=wait), 501)  # nothing new: held
    appended = node.append(303, 1, 2)
    assert isinstance(appended, Appended)
    # appended, not yet on disk: the shell could not read them, so the fetch stays held
    assert not of_type(appended.actions, SendResponse)
    [sent] = of_type(node.handle(303, LogFlushed(3)), SendResponse)
    assert sent.correlation_id == 501 and isinstance(sent.response, FetchResponse)
    assert sent.response.records_from_offset == 1
    assert fetched(node, 304, fetch(3, 1, 3, 1, hw=1)).high_watermark == 3  # a new high watermark
    assert not ask(node, 304, 3, fetch(3, 1, 3, 1, hw=3, wait=wait), 502)  # nothing new: held
    assert not of_type(node.handle(304 + wait - 1, Tick()), SendResponse)
    [expired] = of_type(node.handle(304 + wait, Tick()), SendResponse)
    assert expired.correlation_id == 502


def test_a_leader_serves_records_once_they_are_on_disk() -> None:
    """Records appended but not flushed are not in a Fetch answer (the shell reads them from the
    disk, where they are not yet): the fetch waits for the flush, then gets them at once."""
    node = leader()
    node.handle(300, LogFlushed(1))
    fetched(node, 301, fetch(2, 1, 1, 1, hw=-1))
    assert isinstance(node.append(302, 1, 2), Appended)
    assert not ask(node, 303, 2, fetch(2, 1, 1, 1, hw=1, wait=TIMING["fetch_max_wait_ms"]), 601)
    [sent] = of_type(node.handle(304, LogFlushed(3)), SendResponse)
    assert sent.correlation_id == 601 and isinstance(sent.response, FetchResponse)
    assert sent.response.records_from_offset == 1


def test_a_leader_that_steps_down_answers_its_held_fetches() -> None:
    node = leader()
    node.handle(300, LogFlushed(1))
    fetched(node, 301, fetch(2, 1, 1, 1))
    assert not ask(node, 302, 3, fetch(3, 1, 1, 1, hw=1, wait=50), 501)
    vote = VoteRequest(CLUSTER, Epoch(2), NodeId(2), NodeId(1), Epoch(1), 1)
    actions = ask(node, 303, 2, vote, 502)
    assert StopLeading(Epoch(1)) in actions
    held = answer(actions, 501)
    assert held.error == ErrorCode.NOT_LEADER_OR_FOLLOWER and held.leader_epoch == 2


def test_fetch_errors() -> None:
    node = leader()  # epoch 1
    follower, _ = started(2, ElectionState(Epoch(1), NodeId(1)))
    cases = [
        (node, fetch(2, 0, 0, 0), ErrorCode.FENCED_LEADER_EPOCH),
        (node, fetch(2, 2, 0, 0), ErrorCode.UNKNOWN_LEADER_EPOCH),
        (node, fetch(2, 1, 0, 2), ErrorCode.INVALID_REQUEST),  # a last epoch past the current
        (node, FetchRequest("elsewhere", NodeId(2), Epoch(1), 0, Epoch(0)), ErrorCode.INCONSISTENT_CLUSTER_ID),
        (follower, fetch(3, 1, 0, 0), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    ]
    for index, (target, request, error) in enumerate(cases):
        response = fetched(target, 300 + index, request, index)
        assert (response.error, response.leader_id, response.leader_epoch) == (error, 1, 1), request


def test_appends_only_as_the_leader_of_that_epoch() -> None:
    node = leader()
    first = node.append(300, 1, 3, "a")
    second = node.append(301, 1, 1, "b")
    assert isinstance(first, Appended) and isinstance(second, Appended)
    assert first.batch == Batch(1, 3, Epoch(1), "a") and second.batch == Batch(4, 4, Epoch(1), "b")
    assert first.actions == (AppendBatches((first.batch,)),)
    assert node.append(302, 2, 1) == NotLeader(Epoch(1), NodeId(1))  # not the epoch it leads
    follower, _ = started(2, ElectionState(Epoch(1), NodeId(1)))
    assert follower.append(302, 1, 1) == NotLeader(Epoch(1), NodeId(1))
