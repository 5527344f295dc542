"""A small control-plane story as capture rows, with every kind of row the job reads (test-only).

Times are milliseconds after `T0_NS`; latencies are 1 ms unless said. The controller's view:
  0    brokers 1, 2, 3 register (listeners 127.0.0.1:9101..9103) -> epochs 10, 11, 12
  10   heartbeats of brokers 1 and 2 (2 ms and 4 ms)
  100  CreateTopics "orders" (1 partition) -> id ORDERS_ID
  110  LeaderAndIsr v7 to brokers 1 and 2: orders-0 leader 1, leader epoch 0, ISR [1,2,3], partition epoch 0
  200  AlterPartition v2 (broker 1, epoch 10): ISR [1,2] at partition epoch 0 -> granted, partition epoch 1
  300  AlterPartition v2: ISR [1,2,3] at partition epoch 1 -> granted, partition epoch 2
  310  AlterPartition v2 replayed at partition epoch 1 -> INVALID_UPDATE_VERSION
  400  broker 2 registers again (it bounced) -> epoch 20
  410  heartbeat of broker 2's old incarnation (epoch 11) -> STALE_BROKER_EPOCH
  420  AlterReplicaState v0 (broker 2, epoch 20) orders-0 OFFLINE; 430 ONLINE
  500  StopReplica v3 to broker 3 (leader epoch 0) -> orders-0 FENCED_LEADER_EPOCH
  600  ControlledShutdown v3 (broker 3, epoch 12) -> orders-0 remains; 1600 -> nothing remains (2 ms)
  700  heartbeat of broker 1 with WantShutDown -> not yet; 2700 -> ShouldShutDown
The fleet's view (prefix "fleet"): broker 1 sent the AlterPartition of 200 at 199.5 and got its
answer at 202 (the controller held it for 1 ms of those 2.5).
Corrupt rows (`corrupt_rows`): a truncated request, garbage, an unknown api key, a response cut short.
"""

from __future__ import annotations

import uuid

from protocol.capture import INBOUND, OUTBOUND, Exchange
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.messages.alter_replica_state import (
    OFFLINE,
    ONLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
)
from protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ControlledShutdownResponseRemainingPartition,
)
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.messages.leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrRequestPartitionState,
    LeaderAndIsrRequestTopicState,
    LeaderAndIsrResponse,
    LeaderAndIsrResponsePartitionError,
    LeaderAndIsrResponseTopicError,
)
from protocol.messages.stop_replica import (
    StopReplicaRequest,
    StopReplicaRequestPartitionState,
    StopReplicaRequestTopicState,
    StopReplicaResponse,
    StopReplicaResponsePartitionError,
)
from protocol.registry import encode_request

from .captures import exchange, raw_exchange

ORDERS_ID = uuid.UUID("7a1f0c52-3b8e-4d2a-9c61-0e5f4b3a2d19")
LISTENERS = {1: "127.0.0.1:9101", 2: "127.0.0.1:9102", 3: "127.0.0.1:9103"}


def registration(broker: int, epoch: int, at_ms: float) -> Exchange:
    host, port = LISTENERS[broker].split(":")
    listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host=host, port=int(port))
    request = BrokerRegistrationRequest(
        broker_id=broker, cluster_id="c", incarnation_id=uuid.UUID(int=epoch), listeners=(listener,)
    )
    return exchange(request, 3, BrokerRegistrationResponse(broker_epoch=epoch), at_ms=at_ms)


def heartbeat(
    broker: int, epoch: int, at_ms: float, *, error: int = 0, want: bool = False, done: bool = False,
    latency_ms: float = 1.0, correlation_id: int | None = None,
) -> Exchange:  # fmt: skip
    request = BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epoch, want_shut_down=want)
    response = BrokerHeartbeatResponse(error_code=error, is_fenced=False, should_shut_down=done)
    return exchange(request, 1, response, at_ms=at_ms, latency_ms=latency_ms, correlation_id=correlation_id)


def alter_partition(isr: tuple[int, ...], partition_epoch: int, at_ms: float, *, granted: int | None,
                    correlation_id: int | None = None, direction: str = INBOUND,
                    latency_ms: float = 1.0, broker: int = 1) -> Exchange:  # fmt: skip
    asked = AlterPartitionRequestPartitionData(
        partition_index=0, leader_epoch=0, new_isr=isr, partition_epoch=partition_epoch
    )
    request = AlterPartitionRequest(
        broker_id=broker,
        broker_epoch=10,
        topics=(AlterPartitionRequestTopicData(topic_id=ORDERS_ID, partitions=(asked,)),),
    )
    if granted is None:
        answer = AlterPartitionResponsePartitionData(partition_index=0, error_code=ErrorCode.INVALID_UPDATE_VERSION)
    else:
        answer = AlterPartitionResponsePartitionData(
            partition_index=0, leader_id=1, leader_epoch=0, isr=isr, partition_epoch=granted
        )
    response = AlterPartitionResponse(
        topics=(AlterPartitionResponseTopicData(topic_id=ORDERS_ID, partitions=(answer,)),)
    )
    return exchange(
        request, 2, response, at_ms=at_ms, correlation_id=correlation_id, direction=direction, latency_ms=latency_ms
    )


def leader_and_isr(broker: int, at_ms: float) -> Exchange:
    state = LeaderAndIsrRequestPartitionState(
        partition_index=0, controller_epoch=1, leader=1, leader_epoch=0, isr=(1, 2, 3), partition_epoch=0,
        replicas=(1, 2, 3),
    )  # fmt: skip
    topic = LeaderAndIsrRequestTopicState(topic_name="orders", topic_id=ORDERS_ID, partition_states=(state,))
    request = LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, broker_epoch=9 + broker, type_=1, topic_states=(topic,), live_leaders=()
    )
    errors = (LeaderAndIsrResponsePartitionError(partition_index=0),)
    response = LeaderAndIsrResponse(
        topics=(LeaderAndIsrResponseTopicError(topic_id=ORDERS_ID, partition_errors=errors),)
    )
    return exchange(
        request, 7, response, at_ms=at_ms, direction=OUTBOUND, peer=LISTENERS[broker], connection_id=90 + broker
    )


def stop_replica(at_ms: float) -> Exchange:
    topic = StopReplicaRequestTopicState(
        topic_name="orders", partition_states=(StopReplicaRequestPartitionState(partition_index=0, leader_epoch=0),)
    )
    request = StopReplicaRequest(controller_id=1, controller_epoch=1, broker_epoch=12, topic_states=(topic,))
    error = StopReplicaResponsePartitionError(
        topic_name="orders", partition_index=0, error_code=ErrorCode.FENCED_LEADER_EPOCH
    )
    return exchange(
        request, 3, StopReplicaResponse(partition_errors=(error,)), at_ms=at_ms, direction=OUTBOUND,
        peer=LISTENERS[3], connection_id=93,
    )  # fmt: skip


def alter_replica_state(state: int, at_ms: float) -> Exchange:
    request = AlterReplicaStateRequest(
        broker_id=2, broker_epoch=20, new_state=state, reason="disk",
        topics=(AlterReplicaStateRequestTopicReplicas(name="orders", partitions=(0,)),),
    )  # fmt: skip
    result = AlterReplicaStateResponseTopicResult(
        name="orders", partitions=(AlterReplicaStateResponsePartitionResult(partition_index=0),)
    )
    return exchange(request, 0, AlterReplicaStateResponse(topics=(result,)), at_ms=at_ms)


def controlled_shutdown(at_ms: float, remaining: bool, latency_ms: float) -> Exchange:
    left = (ControlledShutdownResponseRemainingPartition(topic_name="orders", partition_index=0),) if remaining else ()
    request = ControlledShutdownRequest(broker_id=3, broker_epoch=12)
    return exchange(
        request, 3, ControlledShutdownResponse(remaining_partitions=left), at_ms=at_ms, latency_ms=latency_ms
    )


def create_topics(at_ms: float) -> Exchange:
    request = CreateTopicsRequest(
        topics=(CreateTopicsRequestCreatableTopic(name="orders", num_partitions=1, replication_factor=3),)
    )
    result = CreateTopicsResponseCreatableTopicResult(
        name="orders", topic_id=ORDERS_ID, num_partitions=1, replication_factor=3
    )
    return exchange(request, 7, CreateTopicsResponse(topics=(result,)), at_ms=at_ms)


AP_200_CORRELATION = 5200


def controller_rows() -> list[Exchange]:
    """The controller's capture of the story, in time order."""
    return [
        registration(1, 10, 0),
        registration(2, 11, 0.2),
        registration(3, 12, 0.4),
        heartbeat(1, 10, 10, latency_ms=2),
        heartbeat(2, 11, 10.5, latency_ms=4),
        create_topics(100),
        leader_and_isr(1, 110),
        leader_and_isr(2, 110.5),
        alter_partition((1, 2), 0, 200, granted=1, correlation_id=AP_200_CORRELATION),
        alter_partition((1, 2, 3), 1, 300, granted=2),
        alter_partition((1, 2), 1, 310, granted=None),
        registration(2, 20, 400),
        heartbeat(2, 11, 410, error=ErrorCode.STALE_BROKER_EPOCH),
        alter_replica_state(OFFLINE, 420),
        alter_replica_state(ONLINE, 430),
        stop_replica(500),
        controlled_shutdown(600, remaining=True, latency_ms=1),
        heartbeat(1, 10, 700, want=True),
        controlled_shutdown(1600, remaining=False, latency_ms=2),
        heartbeat(1, 10, 2700, want=True, done=True),
    ]


def fleet_rows() -> list[Exchange]:
    """The fleet's capture: broker 1's side of the AlterPartition of 200."""
    return [
        alter_partition(
            (1, 2), 0, 199.5, granted=1, correlation_id=AP_200_CORRELATION, direction=OUTBOUND, latency_ms=2.5
        )
    ]


def corrupt_rows() -> list[Exchange]:
    """Rows whose frames do not decode, in the order of `CORRUPT_REASONS` (the start of each one's reason)."""

    def heartbeat_frame(correlation_id: int) -> bytes:
        return encode_request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=10), 1, correlation_id)[4:]

    unknown_api = b"\x03\xe7\x00\x00\x00\x00\x00\x4e"  # api key 999, version 0, correlation id 78
    return [
        raw_exchange(heartbeat_frame(77)[:-3], None, api_key=63, api_version=1, correlation_id=77, at_ms=3000),
        raw_exchange(b"\x00", None, api_key=0, api_version=0, correlation_id=0, at_ms=3001),
        raw_exchange(unknown_api, None, api_key=999, api_version=0, correlation_id=78, at_ms=3002),
        raw_exchange(
            heartbeat_frame(79), b"\x00\x00\x00\x4f\x00", api_key=63, api_version=1, correlation_id=79, at_ms=3003
        ),
    ]


CORRUPT_REASONS = [
    "request: DecodeError: cannot decode BrokerHeartbeatRequest v1",
    "request: TruncatedError",
    "request: UnknownApiError: unknown api key 999 (version 0)",
    "response: DecodeError: cannot decode BrokerHeartbeatResponse v1",
]
