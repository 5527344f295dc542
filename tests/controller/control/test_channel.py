"""The outbound control channel against real BrokerControlListeners on 127.0.0.1: order and epochs, version
negotiation (KIP-511 fallback included), stale rejections never resent, reconnects that re-send what was not
acknowledged, orders for older incarnations dropped, brokers going away, malformed answers, capture, metrics."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import trio

from broker_sim.shell.listener import BrokerControlListener
from controller.control import planning as planning_module
from controller.control.channel import ControlChannel
from controller.control.links import LARGE_ORDER_PARTITIONS, OUTBOUND_CONNECTION_IDS
from controller.control.orders import BrokerTarget, ControlOrder, PartitionState, StopPartition
from controller.control.outcomes import RECENT_ANSWERS, SentRequest
from protocol.error_codes import ErrorCode
from protocol.framing import FrameBuffer, frame
from protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from protocol.messages.stop_replica import StopReplicaRequest
from protocol.registry import decode_request, decode_response

CONTROLLER_ID = 3000
FOO = uuid.UUID(int=0xF00)
EPOCHS = {1: 100, 2: 200}
FAST = {"backoff_initial_s": 0.005, "backoff_max_s": 0.02, "request_timeout_s": 2.0}


@dataclass
class Served:
    """A listener served on a fixed port, which a test can stop and start again."""

    listener: BrokerControlListener
    nursery: trio.Nursery
    port: int = 0
    scope: trio.CancelScope | None = None
    stopped: trio.Event = field(default_factory=trio.Event)

    async def start(self) -> None:
        self.port = await self.nursery.start(self._serve, self.port)

    async def _serve(self, port: int, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        self.stopped = trio.Event()
        with trio.CancelScope() as self.scope:
            await self.listener.serve(port=port, task_status=task_status)
        self.stopped.set()

    async def stop(self) -> None:
        assert self.scope is not None
        self.scope.cancel()
        await self.stopped.wait()


class Cluster:
    """Brokers (listeners) and the address book the channel reads."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.brokers: dict[int, Served] = {}
        self.epochs = dict(EPOCHS)
        self.gone: set[int] = set()
        self.ports: dict[int, int] = {}

    async def add(self, broker_id: int, max_versions: dict[int, int] | None = None) -> BrokerControlListener:
        listener = BrokerControlListener(broker_id, lambda: self.epochs[broker_id], max_versions=max_versions)
        served = Served(listener, self.nursery)
        await served.start()
        self.brokers[broker_id] = served
        self.ports[broker_id] = served.port
        return listener

    def address(self, broker_id: int) -> BrokerTarget | None:
        if broker_id in self.gone or broker_id not in self.ports:
            return None
        return BrokerTarget("127.0.0.1", self.ports[broker_id], self.epochs[broker_id])

    def channel(self, **options: object) -> ControlChannel:
        return ControlChannel(controller_id=CONTROLLER_ID, broker_address=self.address, **{**FAST, **options})  # type: ignore[arg-type]


@pytest.fixture
def cluster(nursery: trio.Nursery) -> Cluster:
    return Cluster(nursery)


def pstate(partition: int = 0, leader_epoch: int = 3, partition_epoch: int = 5) -> PartitionState:
    return PartitionState("foo", FOO, partition, 1, leader_epoch, (1, 2), partition_epoch, (1, 2), 0)


def lai(broker_id: int, *states: PartitionState, epoch: int | None = None, controller_epoch: int = 5) -> ControlOrder:
    return ControlOrder(
        broker_id=broker_id,
        broker_epoch=EPOCHS[broker_id] if epoch is None else epoch,
        controller_id=CONTROLLER_ID,
        controller_epoch=controller_epoch,
        partitions=states or (pstate(),),
    )


def stops(broker_id: int, *stopped: StopPartition, epoch: int | None = None, controller_epoch: int = 5) -> ControlOrder:
    return ControlOrder(
        broker_id=broker_id,
        broker_epoch=EPOCHS[broker_id] if epoch is None else epoch,
        controller_id=CONTROLLER_ID,
        controller_epoch=controller_epoch,
        stops=stopped,
    )


def stop(partition: int = 0, leader_epoch: int = 3, delete: bool = False) -> StopPartition:
    return StopPartition("foo", FOO, partition, leader_epoch, delete)


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.005)


def control(listener: BrokerControlListener) -> list[tuple[int, int, object]]:
    """(api key, version, request) of the control requests a listener handled."""
    return [(key, version, request) for key, version, request, _ in listener.received if key != 18]


def leader_epochs(listener: BrokerControlListener) -> list[int]:
    return [
        s.leader_epoch
        for _, _, request in control(listener)
        if isinstance(request, LeaderAndIsrRequest)
        for t in request.topic_states
        for s in t.partition_states
    ]


# ---------------------------------------------------------------------- delivery
async def test_orders_arrive_in_order_with_epochs_at_the_highest_versions(
    cluster: Cluster, nursery: trio.Nursery
) -> None:
    one, two = await cluster.add(1), await cluster.add(2)
    channel = cluster.channel()
    channel.submit([lai(1, pstate(leader_epoch=3)), lai(2), stops(1, stop(leader_epoch=4)), lai(1, pstate(0, 4))])
    assert channel.queue_depth(1) == 3
    await nursery.start(channel.run)
    await until(lambda: channel.queue_depth(1) == channel.queue_depth(2) == 0)
    assert [(key, version) for key, version, _ in control(one)] == [(4, 7), (5, 4), (4, 7)]
    assert [(key, version) for key, version, _ in control(two)] == [(4, 7)]
    first = control(one)[0][2]
    assert isinstance(first, LeaderAndIsrRequest)
    assert (first.broker_epoch, first.controller_id, first.controller_epoch) == (100, CONTROLLER_ID, 5)
    assert first.live_leaders[0].port == cluster.ports[1]
    assert leader_epochs(one) == [3, 4]
    assert one.partitions[("foo", 0)].leader_epoch == 4
    assert not one.partitions[("foo", 0)].stopped  # the later LeaderAndIsr made it a replica again
    assert SentRequest(1, 18, 3, 0) in channel.outcomes.recent_answers
    assert [s for s in channel.outcomes.recent_answers if s.broker_id == 1 and s.api_key != 18] == [
        SentRequest(1, 4, 7, 0),
        SentRequest(1, 5, 4, 0),
        SentRequest(1, 4, 7, 0),
    ]


async def test_many_orders_are_pipelined_in_log_order_on_one_connection(
    cluster: Cluster, nursery: trio.Nursery
) -> None:
    one = await cluster.add(1)
    channel = cluster.channel(max_in_flight=4)
    await nursery.start(channel.run)
    channel.submit([lai(1, pstate(leader_epoch=epoch)) for epoch in range(20)])
    # the first four go out as they are (the in-flight window); the rest merged while queued,
    # so the broker sees the states in log order and ends with the latest
    await until(lambda: len(control(one)) == 5)
    assert leader_epochs(one) == [0, 1, 2, 3, 19]
    await trio.sleep(0.02)
    channel.submit([lai(1, pstate(leader_epoch=20))])  # reuses the idle connection
    await until(lambda: len(control(one)) == 6)
    assert one.connections == 1


async def test_a_broker_with_older_versions_gets_those_versions(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1, max_versions={4: 5, 5: 1, 18: 2})
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.submit([lai(1), stops(1, stop(0), stop(1, delete=True))])
    await until(lambda: channel.queue_depth(1) == 0)
    # ApiVersions v3 is refused with the KIP-511 v0 body; v2 (its key-18 max) follows
    assert [s for s in channel.outcomes.recent_answers if s.api_key == 18] == [
        SentRequest(1, 18, 3, ErrorCode.UNSUPPORTED_VERSION),
        SentRequest(1, 18, 2, 0),
    ]
    assert [(key, version) for key, version, _ in control(one)] == [(4, 5), (5, 1), (5, 1)]
    keep, delete = (request for _, _, request in control(one)[1:])
    assert isinstance(keep, StopReplicaRequest) and isinstance(delete, StopReplicaRequest)
    assert (keep.delete_partitions, delete.delete_partitions) == (False, True)
    assert keep.broker_epoch == 100


async def test_an_order_the_broker_cannot_take_is_dropped_and_counted(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1, max_versions={4: -1})  # lists LeaderAndIsr with an empty range
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.submit([lai(1), stops(1, stop())])
    await until(lambda: channel.queue_depth(1) == 0)
    assert [s for s in channel.outcomes.recent_answers if s.api_key != 18] == [
        SentRequest(1, 4, -1, ErrorCode.UNSUPPORTED_VERSION),
        SentRequest(1, 5, 4, 0),
    ]
    assert [key for key, _, _ in control(one)] == [5]
    assert channel.connection_failures == 0


# ---------------------------------------------------------------------- stale rejections
async def test_a_stale_order_is_rejected_logged_counted_and_not_resent(
    cluster: Cluster, nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    one = await cluster.add(1)
    metrics = RecordingMetrics()
    channel = cluster.channel(metrics=metrics)
    await nursery.start(channel.run)
    cluster.epochs[1] = 100
    # the listener's own epoch moves on (a new incarnation) before the channel learns of it
    one.broker_epoch = lambda: 150
    with caplog.at_level(logging.WARNING, logger="fencer.channel"):
        channel.submit([lai(1, epoch=100), lai(1, epoch=150, controller_epoch=4)])
        await until(lambda: channel.queue_depth(1) == 0)
        channel.submit([lai(1, pstate(leader_epoch=4), epoch=150, controller_epoch=6)])
        await until(lambda: channel.queue_depth(1) == 0)
        await trio.sleep(0.05)
    rejected = [s.error_code for s in channel.outcomes.recent_answers if s.api_key == 4]
    assert rejected == [ErrorCode.STALE_BROKER_EPOCH, 0, 0]
    assert len(control(one)) == 3  # nothing was resent
    assert channel.outcomes.stale_rejections == 1
    assert channel.outcomes.error_counts == {(4, ErrorCode.STALE_BROKER_EPOCH): 1}
    assert (1, 4, ErrorCode.STALE_BROKER_EPOCH) in metrics.responses
    assert any("rejected LeaderAndIsr v7 as stale (STALE_BROKER_EPOCH (77))" in r.message for r in caplog.records)


async def test_stale_controller_and_leader_epochs_are_counted_not_resent(
    cluster: Cluster, nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    one = await cluster.add(1)
    channel = cluster.channel()
    await nursery.start(channel.run)
    with caplog.at_level(logging.WARNING, logger="fencer.channel"):
        channel.submit(
            [
                lai(1, pstate(0, leader_epoch=3), pstate(1, leader_epoch=3), controller_epoch=6),
                lai(1, pstate(0, leader_epoch=4), controller_epoch=5),  # older controller epoch
                lai(1, pstate(0, leader_epoch=2), pstate(1, leader_epoch=3), controller_epoch=6),  # fenced foo-0
                stops(1, stop(0, leader_epoch=1), stop(1, leader_epoch=3), controller_epoch=6),  # fenced foo-0
            ]
        )
        await until(lambda: channel.queue_depth(1) == 0)
        await trio.sleep(0.05)
    assert [s.error_code for s in channel.outcomes.recent_answers if s.api_key != 18] == [
        0,
        ErrorCode.STALE_CONTROLLER_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
    ]
    assert len(control(one)) == 4
    assert channel.outcomes.stale_rejections == 3
    assert channel.outcomes.error_counts == {(4, 11): 1, (4, 74): 1, (5, 74): 1}
    assert any("1 partitions (foo-0)" in r.message for r in caplog.records)


# ---------------------------------------------------------------------- reconnects
async def test_a_restarted_listener_gets_the_unacknowledged_orders(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1)
    metrics = RecordingMetrics()
    channel = cluster.channel(metrics=metrics)
    await nursery.start(channel.run)
    channel.submit([lai(1, pstate(leader_epoch=1))])
    await until(lambda: len(control(one)) == 1)
    await cluster.brokers[1].stop()
    channel.submit([lai(1, pstate(leader_epoch=2)), lai(1, pstate(leader_epoch=3))])
    await until(lambda: channel.connection_failures >= 2)
    assert channel.queue_depth(1) == 2
    await cluster.brokers[1].start()  # same port, same broker state
    await until(lambda: channel.queue_depth(1) == 0)
    assert leader_epochs(one) == [1, 2, 3]
    assert metrics.failures.count(1) == channel.connection_failures
    assert metrics.queue[-1] == (1, 0)


async def test_a_connection_dropped_before_the_answer_is_resent(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1)
    one.drop_next_requests = 1
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.submit([lai(1, pstate(leader_epoch=1)), stops(1, stop(leader_epoch=1))])
    await until(lambda: channel.queue_depth(1) == 0)
    assert [key for key, _, _ in control(one)] == [4, 5]
    assert channel.connection_failures == 1
    assert one.connections == 2


async def test_orders_for_an_older_incarnation_are_dropped_after_reconnecting(
    cluster: Cluster, nursery: trio.Nursery
) -> None:
    one = await cluster.add(1)
    channel = cluster.channel()
    await nursery.start(channel.run)
    await cluster.brokers[1].stop()
    channel.submit([lai(1, pstate(leader_epoch=1), epoch=100)])
    await until(lambda: channel.connection_failures >= 1)
    cluster.epochs[1] = 300  # re-registered while unreachable
    channel.submit([lai(1, pstate(leader_epoch=2), epoch=300)])
    await cluster.brokers[1].start()
    await until(lambda: channel.queue_depth(1) == 0)
    assert leader_epochs(one) == [2]
    assert channel.dropped_orders == 1


async def test_orders_held_while_a_full_state_is_built_go_after_it(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1)
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.hold()
    channel.submit([lai(1, pstate(leader_epoch=5))])  # decided after activation: waits
    channel.submit([lai(1, pstate(leader_epoch=6))])
    await trio.sleep(0.05)
    assert channel.queue_depth(1) == 0 and control(one) == []
    channel.release([lai(1, pstate(leader_epoch=4))])  # the full state goes first
    await until(lambda: channel.queue_depth(1) == 0 and len(control(one)) == 3)
    assert leader_epochs(one) == [4, 5, 6]
    channel.submit([lai(1, pstate(leader_epoch=7))])  # released: straight to the queue
    await until(lambda: leader_epochs(one) == [4, 5, 6, 7])


async def test_clear_drops_the_held_orders_and_stops_holding(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1)
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.hold()
    channel.submit([lai(1), lai(1)])
    assert channel.clear() == 2 and channel.dropped_orders == 2  # the epoch is over
    channel.submit([lai(1, pstate(leader_epoch=9))])  # a later epoch's, not held
    await until(lambda: leader_epochs(one) == [9])


async def test_a_broker_without_an_address_ends_its_task_and_drops_its_queue(
    cluster: Cluster, nursery: trio.Nursery
) -> None:
    await cluster.add(1)
    await cluster.brokers[1].stop()
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.submit([lai(1), lai(1)])
    await until(lambda: channel.connection_failures >= 2)
    assert channel.is_running(1)
    assert channel.queue_depth(1) == 2
    cluster.gone.add(1)  # fenced
    await until(lambda: not channel.is_running(1))
    assert channel.queue_depth(1) == 0
    assert channel.dropped_orders == 2


async def test_an_idle_connection_closed_by_the_broker_ends_the_task(cluster: Cluster, nursery: trio.Nursery) -> None:
    one = await cluster.add(1)
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.submit([lai(1)])
    await until(lambda: len(control(one)) == 1)
    assert channel.is_running(1)
    await cluster.brokers[1].stop()
    await until(lambda: not channel.is_running(1))
    assert channel.connection_failures == 0


async def test_orders_submitted_before_run_are_delivered_when_it_starts(
    cluster: Cluster, nursery: trio.Nursery
) -> None:
    one = await cluster.add(1)
    channel = cluster.channel()
    channel.submit([lai(1)])
    assert not channel.is_running(1)
    await nursery.start(channel.run)
    await until(lambda: channel.queue_depth(1) == 0)
    assert len(control(one)) == 1


# ---------------------------------------------------------------------- malformed brokers
async def fake_broker(answer: Callable[[bytes], bytes], task_status: trio.TaskStatus[int]) -> None:
    """A server that answers every frame with `answer(payload)`."""

    async def handle(stream: trio.SocketStream) -> None:
        frames = FrameBuffer()
        async with stream:
            while data := await stream.receive_some(65536):
                frames.receive_data(data)
                for payload in frames.frames():
                    await stream.send_all(answer(payload))

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda payload: frame(payload[4:8] + b"\xff\xff\xff"), id="undecodable-body"),
        pytest.param(lambda payload: frame(b"\x00\x00\x00\x63" + b"\x00\x00\x00\x00\x00\x00"), id="wrong-correlation"),
        pytest.param(lambda payload: b"\x7f\xff\xff\xff", id="huge-frame"),
        pytest.param(lambda payload: frame(payload[4:8] + b"\x00\x01\x00\x00\x00\x00"), id="error-1"),
    ],
)
async def test_a_malformed_answer_closes_the_connection_and_counts_a_failure(
    cluster: Cluster, nursery: trio.Nursery, answer: Callable[[bytes], bytes]
) -> None:
    def respond(payload: bytes) -> bytes:
        decode_request(payload)  # the channel sends well-formed requests
        return answer(payload)

    port = await nursery.start(fake_broker, respond)
    cluster.ports[1] = port
    channel = cluster.channel()
    await nursery.start(channel.run)
    channel.submit([lai(1)])
    await until(lambda: channel.connection_failures >= 3)
    assert channel.queue_depth(1) == 1
    one = await cluster.add(1)  # the broker comes back sane: the order goes through
    await until(lambda: channel.queue_depth(1) == 0)
    assert len(control(one)) == 1


# ---------------------------------------------------------------------- capture and metrics
@dataclass
class RecordingMetrics:
    queue: list[tuple[int, int]] = field(default_factory=list)
    responses: list[tuple[int, int, int]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)

    def outbound_queue(self, broker_id: int, depth: int) -> None:
        self.queue.append((broker_id, depth))

    def outbound_response(self, broker_id: int, api_key: int, error_code: int) -> None:
        self.responses.append((broker_id, api_key, error_code))

    def outbound_connection_failure(self, broker_id: int) -> None:
        self.failures.append(broker_id)


@dataclass
class RecordingCapture:
    exchanges: list[object] = field(default_factory=list)

    def add(self, exchange: object) -> None:
        self.exchanges.append(exchange)


async def test_exchanges_are_captured_and_metrics_reported(cluster: Cluster, nursery: trio.Nursery) -> None:
    await cluster.add(1)
    capture, metrics = RecordingCapture(), RecordingMetrics()
    channel = cluster.channel(capture=capture, metrics=metrics)
    await nursery.start(channel.run)
    channel.submit([lai(1)])
    await until(lambda: channel.queue_depth(1) == 0)
    assert metrics.queue == [(1, 1), (1, 0)]
    assert metrics.responses == [(1, 4, 0)]
    keys = [getattr(exchange, "api_key", None) for exchange in capture.exchanges]
    assert keys == [18, 4]
    exchange = capture.exchanges[1]
    assert getattr(exchange, "direction", None) == "outbound"
    assert getattr(exchange, "peer", None) == f"127.0.0.1:{cluster.ports[1]}"
    request = decode_request(getattr(exchange, "request", b""))
    assert (request.api_key, request.api_version, request.correlation_id) == (4, 7, 2)
    assert getattr(exchange, "response_time_ns", 0) >= getattr(exchange, "request_time_ns", -1) > 0
    assert getattr(exchange, "connection_id", 0) > OUTBOUND_CONNECTION_IDS
    header, response = decode_response(getattr(exchange, "response", b""), 4, 7)
    assert header.correlation_id == 2
    assert isinstance(response, LeaderAndIsrResponse) and response.error_code == 0


async def test_only_the_recent_answers_are_kept_however_many_requests_are_sent(
    cluster: Cluster, nursery: trio.Nursery
) -> None:
    one = await cluster.add(1)
    metrics = RecordingMetrics()
    channel = cluster.channel(metrics=metrics)
    await nursery.start(channel.run)
    total = RECENT_ANSWERS * 3
    channel.submit([stops(1, stop(partition)) for partition in range(total)])  # StopReplica orders never merge
    await until(lambda: channel.queue_depth(1) == 0)
    assert len(control(one)) == total  # every request was sent
    assert len(metrics.responses) == total  # and every answer counted
    assert list(channel.outcomes.recent_answers) == [SentRequest(1, 5, 4, 0)] * RECENT_ANSWERS  # the latest only


async def test_an_unreachable_brokers_queue_stays_bounded() -> None:
    """LeaderAndIsr orders behind the in-flight window merge; the latest state of each partition wins."""
    import uuid as _uuid

    from controller.control.channel import ControlChannel
    from controller.control.orders import ControlOrder, PartitionState

    channel = ControlChannel(controller_id=1, broker_address=lambda broker_id: None, max_in_flight=4)
    topic = _uuid.UUID(int=7)
    for round_number in range(100):
        states = tuple(
            PartitionState("t", topic, p, 1, round_number, (1, 2), round_number, (1, 2), 0) for p in range(3)
        )
        channel.submit(
            [ControlOrder(broker_id=2, broker_epoch=5, controller_id=1, controller_epoch=1, partitions=states)]
        )
    assert channel.queue_depth(2) == 5  # the in-flight window, then one merged order
    last = channel._links[2].queue[-1]
    assert {(s.partition, s.leader_epoch) for s in last.partitions} == {(0, 99), (1, 99), (2, 99)}


@pytest.mark.parametrize("full", [False, True])
async def test_a_large_order_is_never_built_in_one_step_of_the_event_loop(
    cluster: Cluster, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch, full: bool
) -> None:
    """An incremental order is cut into requests of at most LARGE_ORDER_PARTITIONS partitions, each
    built on the loop; a full one must stay one request, so it is built in a worker thread."""
    one = await cluster.add(1)
    built: list[tuple[int, bool]] = []  # (partitions, on the event loop?)
    encode = planning_module.encode_order

    def watched(conn: object, order: ControlOrder, *args: object) -> object:
        try:
            trio.lowlevel.current_task()
            built.append((len(order.partitions), True))
        except RuntimeError:  # no trio task: a worker thread
            built.append((len(order.partitions), False))
        return encode(conn, order, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(planning_module, "encode_order", watched)
    channel = cluster.channel()
    await nursery.start(channel.run)
    big = 2 * LARGE_ORDER_PARTITIONS + 1
    order = dataclasses.replace(lai(1, *(pstate(partition) for partition in range(big))), full=full)
    channel.submit([order])
    await until(lambda: channel.queue_depth(1) == 0, timeout=30)
    if full:
        assert built == [(big, False)]
        assert len(control(one)) == 1
    else:
        assert built == [(LARGE_ORDER_PARTITIONS, True), (LARGE_ORDER_PARTITIONS, True), (1, True)]
        assert [len(request.topic_states[0].partition_states) for _, _, request in control(one)] == [  # type: ignore[attr-defined]
            LARGE_ORDER_PARTITIONS,
            LARGE_ORDER_PARTITIONS,
            1,
        ]
    assert len(one.partitions) == big
