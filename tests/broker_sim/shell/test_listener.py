"""The broker side of LeaderAndIsr/StopReplica over real sockets: epoch rules per version, ApiVersions with
the KIP-511 fallback, response shapes, pipelining, and closing on what Kafka closes on."""

from __future__ import annotations

import itertools
import struct
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import trio

from broker_sim.shell.listener import (
    BrokerControlListener,
    PartitionView,
    Stop,
    decided_stops,
    request_digest,
    request_type,
)
from controller.control.orders import ControlOrder, PartitionState, StopPartition
from controller.control.requests import leader_and_isr_request, stop_replica_requests
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.framing import FrameBuffer, frame
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.messages.create_topics import CreateTopicsRequest
from protocol.messages.leader_and_isr import (
    LeaderAndIsrResponse,
    LeaderAndIsrResponsePartitionError,
    LeaderAndIsrResponseTopicError,
)
from protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse, StopReplicaResponsePartitionError
from protocol.registry import decode_response, encode_request
from protocol.spec import Data

BROKER_ID = 1
EPOCH = 100
FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA4)


class Client:
    """A bare Kafka client: encode_request out, decode_response in."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.frames = FrameBuffer()
        self.correlation = itertools.count(1)

    async def send(self, body: Data, version: int) -> int:
        correlation_id = next(self.correlation)
        await self.stream.send_all(encode_request(body, version, correlation_id))
        return correlation_id

    async def receive(self) -> bytes | None:
        with trio.fail_after(5):
            while (payload := self.frames.next_frame()) is None:
                data = await self.stream.receive_some(65536)
                if not data:
                    return None
                self.frames.receive_data(data)
        return payload

    async def call(self, body: Data, version: int) -> Data:
        correlation_id = await self.send(body, version)
        payload = await self.receive()
        assert payload is not None, "connection closed"
        header, response = decode_response(payload, body.API.key, version)
        assert header.correlation_id == correlation_id
        return response

    async def closed(self) -> bool:
        try:
            return await self.receive() is None
        except trio.BrokenResourceError:
            return True


@dataclass
class Broker:
    listener: BrokerControlListener
    port: int
    epoch: list[int] = field(default_factory=lambda: [EPOCH])

    async def connect(self) -> Client:
        return Client(await trio.open_tcp_stream("127.0.0.1", self.port))


async def start_broker(nursery: trio.Nursery, max_versions: dict[int, int] | None = None) -> Broker:
    epoch = [EPOCH]
    listener = BrokerControlListener(BROKER_ID, lambda: epoch[0], max_versions=max_versions)
    port = await nursery.start(listener.serve)
    return Broker(listener, port, epoch)


@pytest.fixture
async def broker(nursery: trio.Nursery) -> AsyncIterator[Broker]:
    yield await start_broker(nursery)


def pstate(topic: str = "foo", topic_id: uuid.UUID = FOO, partition: int = 0, **changes: int) -> PartitionState:
    values = {"leader": 1, "leader_epoch": 3, "partition_epoch": 5, **changes}
    return PartitionState(
        topic_name=topic,
        topic_id=topic_id,
        partition=partition,
        leader=values["leader"],
        leader_epoch=values["leader_epoch"],
        isr=(1, 2),
        partition_epoch=values["partition_epoch"],
        replicas=(1, 2),
        leader_recovery_state=0,
    )


def order(
    *states: PartitionState,
    stops: tuple[StopPartition, ...] = (),
    broker_epoch: int = EPOCH,
    controller_epoch: int = 5,
    full: bool = False,
) -> ControlOrder:
    return ControlOrder(
        broker_id=BROKER_ID,
        broker_epoch=broker_epoch,
        controller_id=3000,
        controller_epoch=controller_epoch,
        partitions=states,
        stops=stops,
        full=full,
    )


def stop(partition: int = 0, leader_epoch: int = 3, delete: bool = False, topic: str = "foo") -> StopPartition:
    return StopPartition(topic, FOO, partition, leader_epoch, delete)


async def leader_and_isr(client: Client, the_order: ControlOrder, version: int) -> LeaderAndIsrResponse:
    response = await client.call(leader_and_isr_request(the_order, version), version)
    assert isinstance(response, LeaderAndIsrResponse)
    return response


async def stop_replica(client: Client, the_order: ControlOrder, version: int) -> StopReplicaResponse:
    (request,) = stop_replica_requests(the_order, version)
    response = await client.call(request, version)
    assert isinstance(response, StopReplicaResponse)
    return response


def partition_errors(response: LeaderAndIsrResponse) -> list[tuple[int, int]]:
    nested = [p for t in response.topics for p in t.partition_errors]
    return [(p.partition_index, p.error_code) for p in (*response.partition_errors, *nested)]


# ---------------------------------------------------------------------- ApiVersions
async def test_api_versions_v3_lists_the_control_apis(broker: Broker) -> None:
    client = await broker.connect()
    response = await client.call(ApiVersionsRequest(client_software_name="fencer", client_software_version="0.1"), 3)
    assert response == ApiVersionsResponse(
        api_keys=(
            ApiVersionsResponseApiVersion(api_key=4, min_version=0, max_version=7),
            ApiVersionsResponseApiVersion(api_key=5, min_version=0, max_version=4),
            ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),
        )
    )


async def test_an_exchange_is_timed_from_when_its_frame_arrived_even_behind_a_gate(nursery: trio.Nursery) -> None:
    """The capture's request time is the frame's arrival, its response time the answer: a paused
    broker's exchange spans the pause (it used to carry the answer's time twice, latency 0)."""
    seen: list[tuple[int, int, bytes | None]] = []
    listener = BrokerControlListener(
        BROKER_ID,
        lambda: EPOCH,
        on_exchange=lambda peer, payload, reply, received_ns: seen.append((received_ns, time.time_ns(), reply)),
    )
    listener.gate = gate = trio.Event()
    port = await nursery.start(listener.serve)
    client = await Broker(listener, port).connect()
    sent_ns = time.time_ns()
    await client.send(ApiVersionsRequest(client_software_name="fencer", client_software_version="0.1"), 3)
    await trio.sleep(0.05)  # the listener holds the frame behind the gate
    assert seen == []
    opened_ns = time.time_ns()
    listener.gate = None
    gate.set()
    answer = await client.receive()
    ((received_ns, answered_ns, reply),) = seen
    assert sent_ns <= received_ns < opened_ns <= answered_ns
    assert reply is not None and reply[4:] == answer


async def test_api_versions_v99_gets_the_v0_fallback_body(broker: Broker) -> None:
    client = await broker.connect()
    # header v2: key 18, version 99, correlation 7, null client id, empty tags; the body is never read
    await client.stream.send_all(frame(struct.pack(">hhih", 18, 99, 7, -1) + b"\x00garbage"))
    payload = await client.receive()
    assert payload is not None
    header, response = decode_response(payload, 18, 0)
    assert header.correlation_id == 7
    assert response == ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),),
    )
    # the connection stays usable at a supported version
    assert isinstance(await client.call(ApiVersionsRequest(), 0), ApiVersionsResponse)


async def test_api_versions_v3_checks_the_client_software_name(broker: Broker) -> None:
    client = await broker.connect()
    response = await client.call(ApiVersionsRequest(client_software_name="-bad", client_software_version="1"), 3)
    assert response == ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)


async def test_max_versions_limit_what_is_listed_and_served(nursery: trio.Nursery) -> None:
    broker = await start_broker(nursery, max_versions={4: 5, 18: 2})
    client = await broker.connect()
    # ApiVersions v3 is now unsupported: the KIP-511 fallback names v2
    await client.send(ApiVersionsRequest(client_software_name="fencer", client_software_version="0.1"), 3)
    payload = await client.receive()
    assert payload is not None
    _, fallback = decode_response(payload, 18, 3)
    assert fallback == ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=2),),
    )
    response = await client.call(ApiVersionsRequest(), 2)
    assert isinstance(response, ApiVersionsResponse)
    assert response.api_keys[0] == ApiVersionsResponseApiVersion(api_key=4, min_version=0, max_version=5)
    assert (await leader_and_isr(client, order(pstate()), 5)).error_code == 0
    await client.send(leader_and_isr_request(order(pstate()), 6), 6)
    assert await client.closed()


# ---------------------------------------------------------------------- closing
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(frame(b"\x00\x04"), id="too-short-for-a-header"),
        pytest.param(frame(struct.pack(">hhih", 4, 8, 1, -1)), id="leader-and-isr-v8"),
        pytest.param(frame(struct.pack(">hhih", 4, 0, 1, -1) + b"\x00\x00"), id="truncated-body"),
        pytest.param(frame(struct.pack(">hhih", 1234, 0, 1, -1)), id="unknown-api-key"),
        pytest.param(struct.pack(">i", -5) + b"xxxx", id="negative-size"),
    ],
)
async def test_garbage_closes_the_connection(broker: Broker, raw: bytes) -> None:
    client = await broker.connect()
    await client.stream.send_all(raw)
    assert await client.closed()
    assert broker.listener.received == []


async def test_an_api_the_broker_does_not_serve_closes_the_connection(broker: Broker) -> None:
    client = await broker.connect()
    await client.send(CreateTopicsRequest(topics=()), 5)
    assert await client.closed()


async def test_pipelined_requests_are_answered_in_order(broker: Broker) -> None:
    client = await broker.connect()
    requests = [
        encode_request(ApiVersionsRequest(), 0, 1),
        encode_request(leader_and_isr_request(order(pstate(leader_epoch=3)), 7), 7, 2),
        encode_request(leader_and_isr_request(order(pstate(leader_epoch=2)), 7), 7, 3),
        encode_request(stop_replica_requests(order(stops=(stop(leader_epoch=3),)), 4)[0], 4, 4),
    ]
    await client.stream.send_all(b"".join(requests))
    answers = []
    for correlation_id, key, version in [(1, 18, 0), (2, 4, 7), (3, 4, 7), (4, 5, 4)]:
        payload = await client.receive()
        assert payload is not None
        header, response = decode_response(payload, key, version)
        assert header.correlation_id == correlation_id
        answers.append(response)
    first, second = answers[1], answers[2]
    assert isinstance(first, LeaderAndIsrResponse) and isinstance(second, LeaderAndIsrResponse)
    assert partition_errors(first) == [(0, 0)]
    assert partition_errors(second) == [(0, ErrorCode.FENCED_LEADER_EPOCH)]
    assert [k for k, *_ in broker.listener.received] == [18, 4, 4, 5]


# ---------------------------------------------------------------------- LeaderAndIsr
@pytest.mark.parametrize("version", [0, 2, 5, 7])
async def test_leader_and_isr_is_applied_and_answered_in_the_version_shape(broker: Broker, version: int) -> None:
    client = await broker.connect()
    the_order = order(pstate(), pstate(partition=1), pstate("bar", BAR, 0))
    response = await leader_and_isr(client, the_order, version)
    if version < 5:
        assert response == LeaderAndIsrResponse(
            partition_errors=(
                LeaderAndIsrResponsePartitionError(topic_name="foo", partition_index=0),
                LeaderAndIsrResponsePartitionError(topic_name="foo", partition_index=1),
                LeaderAndIsrResponsePartitionError(topic_name="bar", partition_index=0),
            )
        )
    else:
        assert response == LeaderAndIsrResponse(
            topics=(
                LeaderAndIsrResponseTopicError(
                    topic_id=FOO,
                    partition_errors=(
                        LeaderAndIsrResponsePartitionError(partition_index=0),
                        LeaderAndIsrResponsePartitionError(partition_index=1),
                    ),
                ),
                LeaderAndIsrResponseTopicError(
                    topic_id=BAR, partition_errors=(LeaderAndIsrResponsePartitionError(partition_index=0),)
                ),
            )
        )
    view = broker.listener.partitions[("foo", 0)]
    assert view == PartitionView(
        topic_name="foo",
        topic_id=FOO if version >= 5 else uuid.UUID(int=0),
        partition=0,
        leader=1,
        leader_epoch=3,
        isr=(1, 2),
        partition_epoch=5,
        replicas=(1, 2),
        recovery_known=version >= 6,  # LeaderRecoveryState is in LeaderAndIsr from v6
    )
    assert broker.listener.controller_epoch == 5


@pytest.mark.parametrize("version", [2, 5, 7])
async def test_leader_and_isr_with_an_older_broker_epoch_is_stale(broker: Broker, version: int) -> None:
    client = await broker.connect()
    response = await leader_and_isr(client, order(pstate(), broker_epoch=EPOCH - 1, controller_epoch=9), version)
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert partition_errors(response) == [(0, ErrorCode.STALE_BROKER_EPOCH)]
    assert broker.listener.partitions == {}
    assert broker.listener.controller_epoch == 0  # nothing done, not even the controller epoch


@pytest.mark.parametrize("version", [0, 2, 7])
@pytest.mark.parametrize("broker_epoch", [-1, EPOCH, EPOCH + 1])
async def test_leader_and_isr_accepts_no_equal_or_newer_broker_epochs(
    broker: Broker, version: int, broker_epoch: int
) -> None:
    client = await broker.connect()
    response = await leader_and_isr(client, order(pstate(), broker_epoch=broker_epoch), version)
    assert response.error_code == 0
    assert ("foo", 0) in broker.listener.partitions


async def test_leader_and_isr_v0_has_no_broker_epoch_to_be_stale(broker: Broker) -> None:
    client = await broker.connect()
    response = await leader_and_isr(client, order(pstate(), broker_epoch=EPOCH - 1), 0)
    assert response.error_code == 0


@pytest.mark.parametrize("version", [0, 2, 5, 7])
async def test_leader_and_isr_with_an_older_controller_epoch_is_stale(broker: Broker, version: int) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(), controller_epoch=5), version)
    response = await leader_and_isr(client, order(pstate(leader_epoch=4), controller_epoch=4), version)
    assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert partition_errors(response) == [(0, ErrorCode.STALE_CONTROLLER_EPOCH)]
    assert broker.listener.partitions[("foo", 0)].leader_epoch == 3
    newer = await leader_and_isr(client, order(pstate(leader_epoch=4), controller_epoch=6), version)
    assert newer.error_code == 0
    assert broker.listener.controller_epoch == 6
    assert broker.listener.partitions[("foo", 0)].leader_epoch == 4


@pytest.mark.parametrize("version", [0, 2, 5, 7])
async def test_leader_and_isr_with_an_older_leader_epoch_is_fenced_per_partition(broker: Broker, version: int) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(leader_epoch=3), pstate(partition=1, leader_epoch=3)), version)
    response = await leader_and_isr(
        client, order(pstate(leader_epoch=2, leader=2), pstate(partition=1, leader_epoch=3, partition_epoch=6)), version
    )
    assert response.error_code == 0
    assert partition_errors(response) == [(0, ErrorCode.FENCED_LEADER_EPOCH), (1, 0)]
    assert broker.listener.partitions[("foo", 0)].leader == 1
    assert broker.listener.partitions[("foo", 1)].partition_epoch == 6  # equal epoch, newer partition epoch


async def test_leader_and_isr_replay_of_an_older_partition_epoch_keeps_the_newer_state(broker: Broker) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(partition_epoch=6)), 7)
    response = await leader_and_isr(client, order(pstate(partition_epoch=5)), 7)
    assert partition_errors(response) == [(0, 0)]
    assert broker.listener.partitions[("foo", 0)].partition_epoch == 6


async def test_leader_and_isr_for_a_partition_not_on_this_broker(broker: Broker) -> None:
    client = await broker.connect()
    elsewhere = PartitionState("foo", FOO, 0, 2, 0, (2, 3), 0, (2, 3), 0)
    response = await leader_and_isr(client, order(elsewhere), 7)
    assert partition_errors(response) == [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert broker.listener.partitions == {}


async def test_full_leader_and_isr_deletes_partitions_it_does_not_name(broker: Broker) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(), pstate(partition=1)), 7)
    await leader_and_isr(client, order(pstate(partition=1), full=True), 7)
    assert broker.listener.partitions[("foo", 0)].deleted
    assert not broker.listener.partitions[("foo", 1)].deleted


# ---------------------------------------------------------------------- StopReplica
@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_stop_replica_with_an_older_broker_epoch_is_stale(broker: Broker, version: int) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate()), 7)
    response = await stop_replica(client, order(stops=(stop(),), broker_epoch=EPOCH - 1, controller_epoch=8), version)
    assert response == StopReplicaResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert not broker.listener.partitions[("foo", 0)].stopped
    assert broker.listener.controller_epoch == 5


@pytest.mark.parametrize("version", [1, 2, 3, 4])
@pytest.mark.parametrize("broker_epoch", [-1, EPOCH + 1])
async def test_stop_replica_accepts_no_and_newer_broker_epochs(broker: Broker, version: int, broker_epoch: int) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate()), 7)
    response = await stop_replica(client, order(stops=(stop(),), broker_epoch=broker_epoch), version)
    assert response == StopReplicaResponse(
        partition_errors=(StopReplicaResponsePartitionError(topic_name="foo", partition_index=0),)
    )
    assert broker.listener.partitions[("foo", 0)].stopped


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_stop_replica_with_an_older_controller_epoch_is_stale(broker: Broker, version: int) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(), controller_epoch=5), 7)
    response = await stop_replica(client, order(stops=(stop(),), controller_epoch=4), version)
    assert response == StopReplicaResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
    assert not broker.listener.partitions[("foo", 0)].stopped


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize(
    ("leader_epoch", "error"),
    [(2, ErrorCode.FENCED_LEADER_EPOCH), (3, 0), (4, 0), (-1, 0), (-2, 0)],
)
async def test_stop_replica_v3_plus_checks_the_leader_epoch_per_partition(
    broker: Broker, version: int, leader_epoch: int, error: int
) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(leader_epoch=3), pstate(partition=1)), 7)
    response = await stop_replica(client, order(stops=(stop(0, leader_epoch), stop(1, 3))), version)
    assert response == StopReplicaResponse(
        partition_errors=(
            StopReplicaResponsePartitionError(topic_name="foo", partition_index=0, error_code=error),
            StopReplicaResponsePartitionError(topic_name="foo", partition_index=1),
        )
    )
    assert broker.listener.partitions[("foo", 0)].stopped == (error == 0)
    assert broker.listener.partitions[("foo", 1)].stopped


@pytest.mark.parametrize("version", [1, 2])
async def test_stop_replica_v1_v2_carry_no_leader_epoch_so_never_fence(broker: Broker, version: int) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(leader_epoch=3)), 7)
    response = await stop_replica(client, order(stops=(stop(0, leader_epoch=1),)), version)
    assert response.partition_errors[0].error_code == 0


async def test_stop_replica_delete_then_a_recreated_topic_starts_fresh(broker: Broker) -> None:
    client = await broker.connect()
    await leader_and_isr(client, order(pstate(leader_epoch=7)), 7)
    await stop_replica(client, order(stops=(stop(leader_epoch=-2, delete=True),)), 3)
    assert broker.listener.partitions[("foo", 0)].deleted
    recreated = await leader_and_isr(client, order(pstate("foo", BAR, 0, leader_epoch=0, partition_epoch=0)), 7)
    assert partition_errors(recreated) == [(0, 0)]
    view = broker.listener.partitions[("foo", 0)]
    assert (view.topic_id, view.leader_epoch, view.deleted) == (BAR, 0, False)


async def test_stop_replica_for_an_unknown_partition_is_fine(broker: Broker) -> None:
    client = await broker.connect()
    response = await stop_replica(client, order(stops=(stop(9, 1, delete=True, topic="nope"),)), 3)
    assert response.partition_errors == (StopReplicaResponsePartitionError(topic_name="nope", partition_index=9),)


async def test_the_broker_epoch_follows_the_callable(broker: Broker) -> None:
    client = await broker.connect()
    broker.epoch[0] = EPOCH + 10  # a new incarnation
    response = await leader_and_isr(client, order(pstate(), broker_epoch=EPOCH), 7)
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH


async def test_drop_next_requests_closes_before_handling(broker: Broker) -> None:
    broker.listener.drop_next_requests = 1
    client = await broker.connect()
    await client.call(ApiVersionsRequest(), 0)
    await client.send(leader_and_isr_request(order(pstate()), 7), 7)
    assert await client.closed()
    assert broker.listener.partitions == {}
    again = await broker.connect()
    assert (await leader_and_isr(again, order(pstate()), 7)).error_code == 0


# ---------------------------------------------------------------------- what the fleet journals
@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_decided_stops_pair_each_partition_with_its_answer_and_none_when_refused_whole(version: int) -> None:
    """The journal's StopObserved: every partition of a StopReplica not refused whole, with its epoch
    (v0-2 carry none: -1), its delete flag (v0-2: the request's) and its answer."""
    listener = BrokerControlListener(BROKER_ID, lambda: EPOCH)
    listener.handle(ApiKey.LEADER_AND_ISR, 7, leader_and_isr_request(order(pstate(leader_epoch=3)), 7))
    stops = (stop(0, leader_epoch=2, delete=True), stop(1, leader_epoch=-2, delete=True))
    (request,) = stop_replica_requests(order(stops=stops), version)
    response = listener.handle(ApiKey.STOP_REPLICA, version, request)
    assert isinstance(request, StopReplicaRequest) and isinstance(response, StopReplicaResponse)
    fenced = ErrorCode.FENCED_LEADER_EPOCH if version >= 3 else 0
    epochs = (2, -2) if version >= 3 else (-1, -1)
    assert decided_stops(request, version, response) == [
        (Stop("foo", 0, epochs[0], True), fenced),
        (Stop("foo", 1, epochs[1], True), 0),
    ]
    stale = order(stops=stops, controller_epoch=1)
    (old,) = stop_replica_requests(stale, version)
    refused = listener.handle(ApiKey.STOP_REPLICA, version, old)
    assert isinstance(old, StopReplicaRequest) and isinstance(refused, StopReplicaResponse)
    assert decided_stops(old, version, refused) == []


@pytest.mark.parametrize(("version", "full", "kind"), [(4, True, 0), (5, False, 1), (5, True, 2), (7, True, 2)])
def test_request_type_is_the_leader_and_isr_type_from_v5(version: int, full: bool, kind: int) -> None:
    assert request_type(leader_and_isr_request(order(pstate(), full=full), version), version) == kind


async def test_on_handled_sees_the_connection_and_the_request_digest(nursery: trio.Nursery) -> None:
    """What a refusal is journalled with (for stale-resent): the connection it came on (one number
    per connection, 0 outside a handled request) and a digest of its content, equal for equal content."""
    seen: list[tuple[int, str, int]] = []
    listener = BrokerControlListener(BROKER_ID, lambda: EPOCH)

    def handled(key: int, version: int, request: Data, response: Data) -> None:
        seen.append((listener.serving_connection, request_digest(request), getattr(response, "error_code", 0)))

    listener.on_handled = handled
    broker = Broker(listener, await nursery.start(listener.serve))
    stale = order(pstate(), broker_epoch=EPOCH - 1)
    first, second = await broker.connect(), await broker.connect()
    for client in (first, first, second):
        await leader_and_isr(client, stale, 5)
    await leader_and_isr(first, order(pstate(), broker_epoch=EPOCH - 2), 5)
    (a, digest, error), (b, same, _), (c, also, _), (d, other, _) = seen
    assert error == ErrorCode.STALE_BROKER_EPOCH
    assert a == b == d != c and 0 not in (a, c)
    assert digest == same == also != other
    assert listener.serving_connection == 0
