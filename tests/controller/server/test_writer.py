"""The group-commit writer (controller.server.writer) around a real engine and log, in one trio run.

Requests record their outcomes (the writer resolves them: `answer` or `close_unanswered`, and never
touches a connection) in a recorder, the channel is a list. Blocking a worker thread on a
`threading.Event` makes the orderings explicit: a snapshot or a commit that is still being
written while the writer goes on, or while it drains. trio's
instrumentation shows what one step of the writer task does.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from controller.control.orders import ControlOrder
from controller.engine import REPLAY_SLICE_RECORDS, Commit, ControllerEngine
from controller.server import writer as writer_module
from controller.server.durability import write_here
from controller.server.metrics import ControllerMetrics
from controller.server.pending import Pending
from controller.server.writer import Writer
from controller.server.writer_snapshots import SNAPSHOT_RETRY_S
from controller.slices import finish
from protocol.error_codes import ErrorCode, response_error_code
from protocol.errors import EncodeError
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
)
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch
from protocol.registry import decode_request, decode_response, encode_request
from protocol.spec import Data

from .test_metrics import value


@dataclass
class Recorder:
    """The outcomes the writer gave: answered (with a frame) or closed unanswered."""

    peer: str = "127.0.0.1:1"
    id: int = 1
    answers: list[Pending] = field(default_factory=list)
    abandoned: list[Pending] = field(default_factory=list)
    answered: trio.Event = field(default_factory=trio.Event)

    def respond(self, pending: Pending) -> None:
        self.answers.append(pending)
        self.answered.set()
        self.answered = trio.Event()

    def abandon(self, pending: Pending) -> None:
        self.abandoned.append(pending)


class Recorded(Pending):
    """A request whose outcome is recorded as it is resolved."""

    __slots__ = ("recorder",)

    def __init__(self, recorder: Recorder, payload: bytes) -> None:
        super().__init__(recorder.id, recorder.peer, payload, decode_request(payload), 0, 0)
        self.recorder = recorder

    def answer(self, frame: bytes, error_code: int = 0) -> None:
        super().answer(frame, error_code)
        self.recorder.respond(self)

    def close_unanswered(self) -> None:
        super().close_unanswered()
        self.recorder.abandon(self)


@dataclass
class Channel:
    orders: list[ControlOrder] = field(default_factory=list)

    def submit(self, orders: Sequence[ControlOrder]) -> None:
        self.orders.extend(orders)


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Setup:
    engine: ControllerEngine
    writer: Writer
    metrics: ControllerMetrics
    clock: Clock
    connection: Recorder = field(default_factory=Recorder)
    correlation: int = 0

    def pending(self, body: Data, version: int) -> Pending:
        self.correlation += 1
        payload = encode_request(body, version, self.correlation)[4:]
        return Recorded(self.connection, payload)

    async def request(self, body: Data, version: int) -> Any:
        """Submit and wait for the answer; the response."""
        pending = self.pending(body, version)
        self.writer.submit(pending)
        while pending not in self.connection.answers:
            await self.connection.answered.wait()
        assert pending.frame is not None and pending.response is None  # only the bytes are kept
        header, response = decode_response(pending.frame[4:], body.API.key, version)
        assert header.correlation_id == self.correlation
        assert pending.error_code == response_error_code(response)
        return response


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    engine = ControllerEngine.start(tmp_path / "data", fsync=False, now_ns=0)
    metrics = ControllerMetrics(lambda: engine)
    clock = Clock()
    writer = Writer(engine, Channel(), metrics, clock=clock)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        yield Setup(engine, writer, metrics, clock)
        nursery.cancel_scope.cancel()
    engine.close()


async def brokers(s: Setup, *broker_ids: int) -> None:
    cluster_id = s.engine.core.config.cluster_id
    for broker in broker_ids:
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="localhost", port=9000 + broker)
        registration = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=broker), listeners=(listener,)
        )
        epoch = (await s.request(registration, 3)).broker_epoch
        heartbeat = BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epoch, current_metadata_offset=1 << 40)
        await s.request(heartbeat, 1)


def topic(name: str, partitions: int, replicas: list[int] | None = None) -> CreateTopicsRequest:
    if replicas is None:
        entry = CreateTopicsRequestCreatableTopic(name=name, num_partitions=partitions, replication_factor=3)
    else:
        assignments = tuple(
            CreateTopicsRequestCreatableReplicaAssignment(partition_index=i, broker_ids=tuple(replicas))
            for i in range(partitions)
        )
        entry = CreateTopicsRequestCreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1, assignments=assignments
        )
    return CreateTopicsRequest(topics=(entry,))


class WriterSteps(trio.abc.Instrument):
    """Records how far the state's last offset moved during each step of the writer task."""

    def __init__(self, engine: ControllerEngine) -> None:
        self.engine = engine
        self.moves: list[int] = []
        self._before = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith("Writer.run"):
            self._before = self.engine.core.state.last_offset

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith("Writer.run"):
            self.moves.append(self.engine.core.state.last_offset - self._before)


async def test_requests_are_answered_in_order_once_committed(setup: Setup) -> None:
    await brokers(setup, 1, 2, 3)
    first, second = setup.pending(topic("a", 3), 7), setup.pending(DescribeClusterRequest(), 0)
    setup.writer.submit(first)
    setup.writer.submit(second)
    while len(setup.connection.answers) < 8:
        await setup.connection.answered.wait()
    assert setup.connection.answers[-2:] == [first, second]
    assert setup.engine.log.next_offset == setup.engine.core.state.last_offset + 1  # durable before answered


async def test_a_large_decision_never_replays_more_than_a_slice_in_one_step_of_the_writer(setup: Setup) -> None:
    await brokers(setup, 1, 2, 3)
    setup.engine.slice_seconds = 0.0
    steps = WriterSteps(setup.engine)
    trio.lowlevel.add_instrument(steps)
    try:
        response = await setup.request(topic("big", 9_999), 7)
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert response.topics[0].error_code == 0
    assert sum(steps.moves) == 10_000
    assert max(steps.moves) <= REPLAY_SLICE_RECORDS


async def test_the_writer_goes_on_deciding_while_a_snapshot_is_written(setup: Setup) -> None:
    await brokers(setup, 1, 2, 3)
    release = threading.Event()
    written = block(setup.engine, "write_snapshot", release)
    setup.engine.snapshot_bytes = 1  # due at the next group
    await setup.request(topic("a", 3), 7)
    assert setup.writer.snapshotting
    for index in range(5):  # answered while the snapshot thread is blocked
        await setup.request(topic(f"b{index}", 1), 7)
    assert setup.writer.snapshotting and not written
    release.set()
    while setup.writer.snapshotting:
        await trio.sleep(0.01)
    assert written and setup.engine.log.snapshots()
    assert value(setup.metrics, "fencer_snapshots_total", outcome="written") == 1


async def test_a_failed_snapshot_is_logged_counted_and_retried_later(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    await brokers(setup, 1, 2, 3)
    write = setup.engine.write_snapshot
    failures = [OSError(24, "Too many open files")]

    def flaky(encoded: Any) -> Path:
        if failures:
            raise failures.pop()
        return write(encoded)

    setup.engine.write_snapshot = flaky  # type: ignore[method-assign]
    setup.engine.snapshot_bytes = 1
    await setup.request(topic("a", 3), 7)
    await settled(setup)
    assert value(setup.metrics, "fencer_snapshots_total", outcome="failed") == 1
    assert "snapshot failed" in caplog.text and not setup.engine.log.snapshots()
    await setup.request(topic("b", 3), 7)  # not yet: the retry waits
    await settled(setup)
    assert not setup.engine.log.snapshots()
    setup.clock.now += SNAPSHOT_RETRY_S
    await setup.request(topic("c", 3), 7)
    await settled(setup)
    assert setup.engine.log.snapshots()
    assert value(setup.metrics, "fencer_snapshots_total", outcome="written") == 1


async def test_an_answer_that_cannot_be_encoded_closes_its_connection_and_the_writer_goes_on(
    setup: Setup, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No input makes a correct decision's answer unencodable (since CreateTopics cuts the long
    # names it quotes): the codec is made to fail on the answer about the topic "doomed".
    encode = writer_module.encode_response

    def failing(response: Any, *args: Any) -> bytes:
        if any(getattr(t, "name", None) == "doomed" for t in getattr(response, "topics", ())):
            raise EncodeError("an unencodable answer")
        return encode(response, *args)

    monkeypatch.setattr(writer_module, "encode_response", failing)
    await brokers(setup, 1)
    doomed, behind = setup.pending(topic("doomed", 1, replicas=[1]), 7), setup.pending(DescribeClusterRequest(), 0)
    setup.writer.submit(doomed)
    setup.writer.submit(behind)  # the same group: answered after the failure
    while behind not in setup.connection.answers:
        await setup.connection.answered.wait()
    assert setup.connection.abandoned == [doomed] and doomed not in setup.connection.answers
    assert value(setup.metrics, "fencer_request_failures_total", stage="encode") == 1
    assert "cannot encode the answer to CreateTopics" in caplog.text
    assert (await setup.request(topic("later", 1, replicas=[1]), 7)).topics[0].error_code == 0
    await settled(setup)  # nothing left in flight: the failed request was counted as finished


async def test_a_request_that_cannot_be_decided_is_counted(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    decide = setup.engine.decide

    def failing(api_key: int, *args: Any, **kwargs: Any) -> Any:
        if api_key == DescribeClusterRequest.API.key:
            raise RuntimeError("a bug")
        return decide(api_key, *args, **kwargs)

    monkeypatch.setattr(setup.engine, "decide", failing)
    doomed = setup.pending(DescribeClusterRequest(), 0)
    setup.writer.submit(doomed)
    await brokers(setup, 1)  # answered after it
    assert setup.connection.abandoned == [doomed]
    assert value(setup.metrics, "fencer_request_failures_total", stage="decide") == 1
    assert value(setup.metrics, "fencer_request_failures_total", stage="encode") == 0


async def test_drain_waits_for_the_commit_in_flight(setup: Setup) -> None:
    await brokers(setup, 1, 2, 3)
    release = threading.Event()
    written = block(setup.engine, "write", release)
    pending = setup.pending(topic("a", 3), 7)
    setup.writer.submit(pending)
    drained = trio.Event()

    async def drain() -> None:
        await setup.writer.drain(0.05)  # the deadline passes with the commit still blocked
        drained.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        await trio.sleep(0.2)
        assert not drained.is_set() and not written
        release.set()
    assert written and pending in setup.connection.answers
    assert setup.engine.log.next_offset == setup.engine.core.state.last_offset + 1


async def test_drain_waits_for_the_snapshot_being_written(setup: Setup) -> None:
    await brokers(setup, 1, 2, 3)
    release = threading.Event()
    written = block(setup.engine, "write_snapshot", release)
    setup.engine.snapshot_bytes = 1
    await setup.request(topic("a", 3), 7)
    assert setup.writer.snapshotting
    async with trio.open_nursery() as nursery:
        nursery.start_soon(setup.writer.drain, 1.0)
        await trio.sleep(0.2)
        assert setup.writer.snapshotting and not written
        release.set()
    assert written and not setup.writer.snapshotting


async def test_a_long_fencing_is_committed_as_it_goes(setup: Setup) -> None:
    await brokers(setup, 1, 2, 3)
    for index in range(3):
        await setup.request(topic(f"t{index}", 2_000, replicas=[1, 2, 3]), 7)
    setup.engine.commit_records = 2_000
    commits_before = value(setup.metrics, "fencer_log_append_latency_seconds_count")
    for broker in (1, 2, 3):  # every session expired long ago
        setup.engine.core.state.heartbeats.last_contact_ns[broker] = 0
    setup.writer.tick()
    with trio.fail_after(60):
        while any(not broker.fenced for broker in setup.engine.core.state.cluster.brokers.values()):
            await trio.sleep(0.01)
    await settled(setup)
    commits = value(setup.metrics, "fencer_log_append_latency_seconds_count") - commits_before
    assert commits >= 6_000 * 2 // 2_000  # leaders move, then ISRs shrink: committed in pieces
    assert setup.engine.settled
    fresh = ControllerEngine.start(setup.engine.log.data_dir, fsync=False, now_ns=0)
    try:
        assert fresh.core.durable_view() == setup.engine.core.durable_view()
    finally:
        fresh.close()


async def settled(s: Setup) -> None:
    """Until nothing is queued, in flight or being snapshotted."""
    with trio.fail_after(30):
        while not s.engine.settled or s.writer.snapshotting:
            await trio.sleep(0.01)
    await trio.testing.wait_all_tasks_blocked()


def block(engine: ControllerEngine, method: str, release: threading.Event) -> list[object]:
    """Make `engine.<method>` wait for `release` (in its worker thread); returns what it wrote."""
    original: Callable[..., object] = getattr(engine, method)
    done: list[object] = []

    def blocked(*args: object) -> object:
        release.wait(10)
        result = original(*args)
        done.append(result)
        return result

    setattr(engine, method, blocked)
    return done


def test_finish_is_how_tools_run_an_engine_decision(tmp_path: Path) -> None:
    engine = ControllerEngine.start(tmp_path / "data", fsync=False, now_ns=0)
    try:
        response = finish(engine.decide(60, 0, DescribeClusterRequest(), 0))
        assert response is not None and response.cluster_id == engine.core.config.cluster_id  # type: ignore[attr-defined]
    finally:
        engine.close()


@dataclass
class Gate:
    """A commit quorum under the test's control: each commit waits for a verdict."""

    verdicts: list[bool] = field(default_factory=list)
    asked: list[int] = field(default_factory=list)
    arrived: trio.Event = field(default_factory=trio.Event)
    leader_id: int | None = 1
    high_watermark: int | None = None
    #: False: this node no longer leads, its commits are never written
    leading: bool = True

    async def write(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        if not self.leading:
            return False
        return await write_here(commit, write)

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        pass

    async def committed(self, end_offset: int) -> bool:
        self.asked.append(end_offset)
        while not self.verdicts:
            await self.arrived.wait()
            self.arrived = trio.Event()
        return self.verdicts.pop(0)

    def verdict(self, committed: bool) -> None:
        self.verdicts.append(committed)
        self.arrived.set()


async def test_nothing_is_answered_or_sent_before_the_commit_quorum_holds_it_and_never_if_it_will_not(
    setup: Setup,
) -> None:
    """The writer's one commit path waits for its `Durability` after the local fsync: the answers
    and the control orders wait with it, and a commit the quorum will never hold (leadership
    lost) closes its requests' connections unanswered, never answers NONE, and sends nothing."""
    await brokers(setup, 1, 2, 3)
    channel = setup.writer._channel
    assert isinstance(channel, Channel)
    gate = Gate()
    setup.writer.durability = gate
    sent_before = len(channel.orders)
    held = setup.pending(topic("held", 3), 7)
    setup.writer.submit(held)
    while not gate.asked:
        await trio.sleep(0.01)
    end = gate.asked[0]
    assert setup.engine.log.next_offset == end  # written and fsync'd locally: not yet committed
    await trio.sleep(0.05)
    assert held not in setup.connection.answers and len(channel.orders) == sent_before
    gate.verdict(True)
    await setup.connection.answered.wait()
    assert held in setup.connection.answers and len(channel.orders) > sent_before

    sent = len(channel.orders)
    lost = setup.pending(topic("lost", 3), 7)
    setup.writer.submit(lost)
    gate.verdict(False)
    while lost not in setup.connection.abandoned:
        await trio.sleep(0.01)
    assert lost not in setup.connection.answers
    await trio.sleep(0.05)
    assert len(channel.orders) == sent


async def test_a_standby_answers_not_controller_and_a_lost_epoch_writes_nothing(setup: Setup) -> None:
    """Every broker and admin request to a node that is not the active controller is answered
    NOT_CONTROLLER (41) naming the leader it knows; ApiVersions still answers. A commit whose
    epoch ended before it was appended is never written: its requests' connections close."""
    await brokers(setup, 1, 2, 3)
    gate = Gate(leader_id=3)
    setup.writer.durability = gate
    end = setup.engine.log.next_offset
    gate.leading = False
    lost = setup.pending(topic("lost", 3), 7)
    setup.writer.submit(lost)
    while lost not in setup.connection.abandoned:
        await trio.sleep(0.01)
    assert setup.engine.log.next_offset == end  # nothing reached the log

    setup.engine.resign()
    answer = await setup.request(topic("t", 3), 7)
    assert [(t.name, t.error_code, t.error_message) for t in answer.topics] == [
        ("t", 41, "The active controller appears to be node 3")
    ]
    heartbeat = BrokerHeartbeatRequest(broker_id=1, broker_epoch=1, current_metadata_offset=1)
    assert (await setup.request(heartbeat, 1)).error_code == 41
    versions = await setup.request(ApiVersionsRequest(), 2)
    assert versions.error_code == 0 and versions.api_keys
    assert setup.engine.log.next_offset == end


@dataclass
class Watermark:
    """A commit quorum whose high watermark the test moves: a commit is committed once it passes."""

    asked: list[int] = field(default_factory=list)
    moved: trio.Event = field(default_factory=trio.Event)
    leader_id: int | None = 1
    high_watermark: int | None = None

    async def write(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        return await write_here(commit, write)

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        pass

    async def committed(self, end_offset: int) -> bool:
        self.asked.append(end_offset)
        while self.high_watermark is None or self.high_watermark < end_offset:
            await self.moved.wait()
        return True

    def advance(self, offset: int) -> None:
        self.high_watermark = offset
        self.moved.set()
        self.moved = trio.Event()


async def test_replication_is_pipelined_and_answers_leave_in_the_logs_order(setup: Setup) -> None:
    """A commit is written while the one before still waits for the quorum (the leader does not
    wait a replication round trip per group), and each is answered only once the high watermark
    passes it, in the log's order."""
    await brokers(setup, 1, 2, 3)
    quorum = Watermark()
    setup.writer.durability = quorum
    first = setup.pending(topic("first", 3), 7)
    setup.writer.submit(first)
    with trio.fail_after(10):
        while len(quorum.asked) < 1:
            await trio.sleep(0.01)
        second = setup.pending(topic("second", 3), 7)
        setup.writer.submit(second)
        while len(quorum.asked) < 2:  # written before the first is committed
            await trio.sleep(0.01)
    first_end, second_end = quorum.asked
    assert first_end < second_end == setup.engine.log.next_offset
    await trio.sleep(0.05)
    assert not {first, second} & set(setup.connection.answers)
    quorum.advance(first_end)
    with trio.fail_after(10):
        while first not in setup.connection.answers:
            await setup.connection.answered.wait()
    await trio.sleep(0.05)
    assert second not in setup.connection.answers
    quorum.advance(second_end)
    with trio.fail_after(10):
        while second not in setup.connection.answers:
            await setup.connection.answered.wait()
    assert setup.connection.answers.index(first) < setup.connection.answers.index(second)


@dataclass
class Deposable(Watermark):
    """A commit quorum that can lose its leadership: from then on nothing is appended or committed."""

    leading: bool = True

    async def write(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        return self.leading and await write_here(commit, write)

    async def committed(self, end_offset: int) -> bool:
        self.asked.append(end_offset)
        while self.leading and (self.high_watermark is None or self.high_watermark < end_offset):
            await self.moved.wait()
        return self.leading

    def depose(self) -> None:
        self.leading = False
        self.advance(-1)


def newer_epoch_batch(engine: ControllerEngine, epochs_ahead: int) -> bytes:
    """A new leader's LeaderChange, as a follower appends it after the node's own records."""
    message = LeaderChangeMessage(
        version=0, leader_id=2, voters=(LeaderChangeMessageVoter(voter_id=2),), granting_voters=()
    )
    return control_batch(engine.log.next_offset, engine.log.last_epoch + epochs_ahead, 0, [(message, 0)])


async def test_once_quiesced_no_commit_the_deposed_leader_took_touches_the_log(setup: Setup) -> None:
    """A leader deposed while one commit is being written and the next, already taken from the
    engine, waits its turn: `quiesce` (what the quorum awaits before the engine resigns and the log
    takes a new leader's batches as a follower) returns only once both have finished (never
    committed, their connections closed), so none of them is encoded against a log of a newer epoch
    (a commit encoded there raises "stale epoch" in the writer's task, which stops the node), and
    the writer goes on."""
    await brokers(setup, 1, 2, 3)
    quorum = Deposable()
    setup.writer.durability = quorum
    release = threading.Event()
    written = block(setup.engine, "write", release)
    first, second = setup.pending(topic("first", 3), 7), setup.pending(topic("second", 3), 7)
    quiesced = trio.Event()

    async def resign() -> None:
        await setup.writer.quiesce()
        quiesced.set()

    async with trio.open_nursery() as nursery:
        setup.writer.submit(first)
        with trio.fail_after(10):
            while setup.engine.log.next_offset == setup.engine.core.state.last_offset + 1:
                await trio.sleep(0.01)  # decided; its write waits on `release`
            setup.writer.submit(second)
            while not second.decided_ns:
                await trio.sleep(0.01)
        await trio.sleep(0.05)  # the second commit is taken and waits for the first's write
        quorum.depose()
        nursery.start_soon(resign)
        await trio.sleep(0.05)
        assert not quiesced.is_set()  # the first commit's write is still in flight
        release.set()
        with trio.fail_after(10):
            await quiesced.wait()
    setup.engine.resign()
    setup.engine.log.append_as_follower(newer_epoch_batch(setup.engine, 3))
    await trio.sleep(0.1)  # a commit still to be encoded would meet the newer epoch now
    assert {first, second} <= set(setup.connection.abandoned)
    assert not {first, second} & set(setup.connection.answers)
    assert len(written) == 1  # the second commit never reached the log
    answer = await setup.request(topic("third", 3), 7)  # the writer task goes on
    assert answer.topics[0].error_code == 41


async def test_a_decision_in_steps_that_outlives_its_leadership_changes_nothing_and_is_never_answered(
    setup: Setup,
) -> None:
    """A controlled shutdown of a broker leading 6,000 partitions is decided in paced steps; the
    node's leadership ends midway (the engine resigns between two steps and goes back to the
    committed state). The rest of the decision is abandoned: the standby's state stays exactly what
    the log holds (the steps went on applying records to it), and the request's connection closes
    unanswered (a success answer would claim records nobody committed)."""
    await brokers(setup, 1, 2, 3)
    for index in range(3):
        await setup.request(topic(f"t{index}", 2_000, replicas=[1, 2, 3]), 7)
    setup.engine.slice_seconds = 0.0
    quorum = Deposable(high_watermark=1 << 40)
    setup.writer.durability = quorum
    start = setup.engine.core.state.last_offset
    epoch = setup.engine.core.state.cluster.brokers[1].epoch
    shutdown = setup.pending(
        BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=1 << 40, want_shut_down=True), 1
    )
    setup.writer.submit(shutdown)
    with trio.fail_after(10):
        while setup.engine.core.state.last_offset < start + 2 * REPLAY_SLICE_RECORDS:
            await trio.sleep(0)
    assert not shutdown.decided_ns  # midway
    quorum.depose()
    setup.engine.resign()  # as the quorum does: back to the committed state
    finish(setup.engine.catch_up(setup.engine.log.next_offset))
    with trio.fail_after(10):
        while shutdown not in setup.connection.abandoned and shutdown not in setup.connection.answers:
            await trio.sleep(0.01)
    await trio.testing.wait_all_tasks_blocked()
    assert shutdown in setup.connection.abandoned and shutdown not in setup.connection.answers
    fresh = ControllerEngine.start(setup.engine.log.data_dir, fsync=False, now_ns=0)
    try:
        assert fresh.core.durable_view() == setup.engine.core.durable_view()
    finally:
        fresh.close()


async def test_the_quorums_work_on_the_engine_runs_on_the_writers_task_in_its_turn(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply`: the quorum's steps (a standby's replay, activation, resignation) run on the
    writer's task, between the requests queued before and after them, never beside a decision."""
    s = setup
    order: list[tuple[str, object]] = []
    decide = s.engine.decide

    def recorded_decide(*args: Any, **kwargs: Any) -> Any:
        order.append(("decide", trio.lowlevel.current_task()))
        return decide(*args, **kwargs)

    async def step() -> None:
        order.append(("step started", trio.lowlevel.current_task()))
        await trio.sleep(0.01)  # a paced replay lets other tasks run: the writer decides nothing meanwhile
        order.append(("step done", trio.lowlevel.current_task()))

    monkeypatch.setattr(s.engine, "decide", recorded_decide)
    first, second = s.pending(DescribeClusterRequest(), 0), s.pending(DescribeClusterRequest(), 0)
    s.writer.submit(first)
    s.writer.apply(step)
    s.writer.submit(second)
    with trio.fail_after(5):
        while second not in s.connection.answers:
            await s.connection.answered.wait()
    assert [what for what, _ in order] == ["decide", "step started", "step done", "decide"]
    assert len({task for _, task in order}) == 1  # one task: the writer's
    assert first in s.connection.answers and second in s.connection.answers


async def test_a_session_timer_judges_sessions_when_it_fired_not_when_the_writer_reached_it(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind long work (a controlled shutdown of 166,700 leaderships took 12 s), a heartbeat that
    arrived in time waits in the queue behind the timer's wake-up: its broker is not fenced for
    the writer's delay, only the broker whose session had run out when the timer fired."""
    s = setup
    now = [0]
    monkeypatch.setattr(writer_module, "monotonic_ns", lambda: now[0])
    timeout = s.engine.core.config.session_timeout_ms * 1_000_000
    await brokers(s, 1)  # its session: from 0
    now[0] = timeout // 3
    await brokers(s, 2)  # its session: from a third of the timeout on
    await s.request(topic("t", 1, replicas=[2, 1]), 7)  # led by 2: a fence of 2 would take its leadership
    state = s.engine.core.state.replication
    led = state.topics[state.names["t"]].partitions[0]
    release = trio.Event()
    s.writer.apply(release.wait)  # long work on the writer's task
    now[0] = timeout + 1
    s.writer.tick()  # broker 1's session ran out
    now[0] = timeout + 2
    epoch = s.engine.core.state.cluster.brokers[2].epoch
    heartbeat = s.pending(BrokerHeartbeatRequest(broker_id=2, broker_epoch=epoch, current_metadata_offset=1 << 40), 1)
    s.writer.submit(heartbeat)  # in time, behind the tick
    now[0] = 3 * timeout  # the writer reaches them late
    release.set()
    with trio.fail_after(10):
        while heartbeat not in s.connection.answers:
            await s.connection.answered.wait()
    await settled(s)
    fenced = {broker_id: broker.fenced for broker_id, broker in s.engine.core.state.cluster.brokers.items()}
    assert fenced == {1: True, 2: False}
    now_led = state.topics[state.names["t"]].partitions[0]
    # 1 left the ISR; 2 never lost its leadership (fenced and unfenced again, it would lead in a newer epoch)
    assert (now_led.leader, now_led.leader_epoch, now_led.isr) == (2, led.leader_epoch, (2,))


async def test_a_heartbeat_the_writer_does_not_reach_by_its_deadline_is_timed_out_and_its_session_kept(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's processExpiredBrokerHeartbeat: behind long work on the writer's task, a heartbeat is
    answered REQUEST_TIMED_OUT at half the heartbeat interval, its broker's session kept (but not
    a stale incarnation's), and the writer skips it when it gets there."""
    s = setup
    await brokers(s, 1, 2)
    deadlines = s.writer._heartbeats
    deadlines.deadline_ns = 50_000_000  # 0.05 s
    cluster, sessions = s.engine.core.state.cluster, s.engine.core.state.heartbeats
    before = dict(sessions.last_contact_ns)
    release = trio.Event()
    s.writer.apply(release.wait)  # long work on the writer's task
    current = BrokerHeartbeatRequest(broker_id=1, broker_epoch=cluster.brokers[1].epoch, current_metadata_offset=7)
    stale = BrokerHeartbeatRequest(broker_id=2, broker_epoch=cluster.brokers[2].epoch - 1)
    waiting = [s.pending(current, 1), s.pending(stale, 1)]
    for pending in waiting:
        s.writer.submit(pending)
    with trio.fail_after(10):
        while not all(pending in s.connection.answers for pending in waiting):
            await s.connection.answered.wait()
    assert not release.is_set()  # answered while the writer was still busy
    for pending in waiting:
        assert pending.frame is not None
        _, response = decode_response(pending.frame[4:], BrokerHeartbeatRequest.API.key, 1)
        assert response.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert sessions.last_contact_ns[1] > before[1] and sessions.metadata_offset[1] == 7
    assert sessions.last_contact_ns[2] == before[2]  # a stale epoch keeps nothing
    assert value(s.metrics, "fencer_broker_heartbeats_timed_out_total") == 2
    release.set()
    await settled(s)
    assert len(s.connection.answers) == len(set(s.connection.answers))  # each answered once
    assert not cluster.brokers[1].fenced
