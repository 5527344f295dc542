"""Control orders shaped into LeaderAndIsr (v0-7) and StopReplica (v0-4) requests: every version encodes,
decodes back to itself and carries the epochs; golden checks of each version's layout."""

from __future__ import annotations

import uuid

import pytest

from controller.control.orders import ControlOrder, PartitionState, StopPartition
from controller.control.requests import (
    TYPE_FULL,
    TYPE_INCREMENTAL,
    TYPE_UNKNOWN,
    common_version,
    leader_and_isr_request,
    response_errors,
    stop_replica_requests,
)
from protocol.compiler import codec
from protocol.messages.leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrRequestLiveLeader,
    LeaderAndIsrRequestPartitionState,
    LeaderAndIsrRequestTopicState,
    LeaderAndIsrResponse,
    LeaderAndIsrResponsePartitionError,
    LeaderAndIsrResponseTopicError,
)
from protocol.messages.stop_replica import (
    StopReplicaRequest,
    StopReplicaRequestPartitionState,
    StopReplicaRequestPartitionV0,
    StopReplicaRequestTopicState,
    StopReplicaRequestTopicV1,
    StopReplicaResponse,
    StopReplicaResponsePartitionError,
)
from protocol.spec import ZERO_UUID
from protocol.versions import Versions

FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA4)
UNKNOWN = uuid.UUID(int=0xDEAD)
BROKER_EPOCH = 4242
CONTROLLER_ID = 3000
CONTROLLER_EPOCH = 7


def state(topic: str, topic_id: uuid.UUID, partition: int, leader: int = 1, is_new: bool = False) -> PartitionState:
    return PartitionState(
        topic_name=topic,
        topic_id=topic_id,
        partition=partition,
        leader=leader,
        leader_epoch=5 + partition,
        isr=(1, 2),
        partition_epoch=9 + partition,
        replicas=(1, 2, 3),
        leader_recovery_state=1,
        is_new=is_new,
    )


def order(
    *, partitions: tuple[PartitionState, ...] = (), stops: tuple[StopPartition, ...] = (), full: bool = False
) -> ControlOrder:
    return ControlOrder(
        broker_id=2,
        broker_epoch=BROKER_EPOCH,
        controller_id=CONTROLLER_ID,
        controller_epoch=CONTROLLER_EPOCH,
        partitions=partitions,
        stops=stops,
        full=full,
    )


# foo-0, bar-0 and foo-1 interleaved: grouping keeps first appearance, partitions their order
LEADER_AND_ISR = order(
    partitions=(state("foo", FOO, 0, is_new=True), state("bar", BAR, 0, leader=2), state("foo", FOO, 1))
)
STOPS = order(
    stops=(
        StopPartition("foo", FOO, 0, leader_epoch=5, delete=False),
        StopPartition("bar", BAR, 3, leader_epoch=-2, delete=True),
        StopPartition("foo", FOO, 1, leader_epoch=6, delete=False),
    )
)
ADDRESSES = {1: ("h1", 9001), 2: ("h2", 9002)}


def roundtrip(message: LeaderAndIsrRequest | StopReplicaRequest, version: int) -> None:
    data = codec(type(message), version).encode(message)
    assert codec(type(message), version).decode_exact(data) == message


# ---------------------------------------------------------------------- LeaderAndIsr
@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_every_version_encodes_and_carries_the_epochs(version: int) -> None:
    request = leader_and_isr_request(LEADER_AND_ISR, version, ADDRESSES)
    roundtrip(request, version)
    assert request.controller_id == CONTROLLER_ID
    assert request.controller_epoch == CONTROLLER_EPOCH
    assert request.broker_epoch == (BROKER_EPOCH if version >= 2 else -1)
    states = request.ungrouped_partition_states or tuple(s for t in request.topic_states for s in t.partition_states)
    assert [s.partition_index for s in states] == ([0, 0, 1] if version < 2 else [0, 1, 0])
    assert {s.controller_epoch for s in states} == {CONTROLLER_EPOCH}
    assert request.live_leaders == (
        LeaderAndIsrRequestLiveLeader(broker_id=1, host_name="h1", port=9001),
        LeaderAndIsrRequestLiveLeader(broker_id=2, host_name="h2", port=9002),
    )


def test_leader_and_isr_v0_golden_fields() -> None:
    request = leader_and_isr_request(order(partitions=(state("foo", FOO, 0, is_new=True),)), 0, {1: ("h1", 9001)})
    assert request == LeaderAndIsrRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=CONTROLLER_EPOCH,
        ungrouped_partition_states=(
            LeaderAndIsrRequestPartitionState(
                topic_name="foo",
                partition_index=0,
                controller_epoch=CONTROLLER_EPOCH,
                leader=1,
                leader_epoch=5,
                isr=(1, 2),
                partition_epoch=9,
                replicas=(1, 2, 3),
            ),
        ),
        live_leaders=(LeaderAndIsrRequestLiveLeader(broker_id=1, host_name="h1", port=9001),),
    )


def test_leader_and_isr_v1_adds_is_new_ungrouped() -> None:
    request = leader_and_isr_request(LEADER_AND_ISR, 1)
    assert [(s.topic_name, s.partition_index, s.is_new) for s in request.ungrouped_partition_states] == [
        ("foo", 0, True),
        ("bar", 0, False),
        ("foo", 1, False),
    ]
    assert request.topic_states == ()
    assert request.live_leaders == ()


@pytest.mark.parametrize("version", [2, 3, 4])
def test_leader_and_isr_v2_to_v4_group_by_topic_name_with_broker_epoch(version: int) -> None:
    request = leader_and_isr_request(LEADER_AND_ISR, version)
    assert request.ungrouped_partition_states == ()
    assert [(t.topic_name, t.topic_id) for t in request.topic_states] == [("foo", ZERO_UUID), ("bar", ZERO_UUID)]
    assert request.topic_states[0].partition_states[0].topic_name == ""
    assert request.broker_epoch == BROKER_EPOCH
    assert request.type_ == TYPE_UNKNOWN


@pytest.mark.parametrize(("full", "type_"), [(False, TYPE_INCREMENTAL), (True, TYPE_FULL)])
def test_leader_and_isr_v5_adds_topic_ids_and_the_type(full: bool, type_: int) -> None:
    request = leader_and_isr_request(order(partitions=LEADER_AND_ISR.partitions, full=full), 5)
    assert [(t.topic_name, t.topic_id) for t in request.topic_states] == [("foo", FOO), ("bar", BAR)]
    assert request.type_ == type_
    assert {s.leader_recovery_state for t in request.topic_states for s in t.partition_states} == {0}


def test_leader_and_isr_v6_carries_the_recovery_state_and_v7_the_kraft_flag() -> None:
    v6 = leader_and_isr_request(LEADER_AND_ISR, 6)
    assert {s.leader_recovery_state for t in v6.topic_states for s in t.partition_states} == {1}
    assert not v6.is_k_raft_controller
    v7 = leader_and_isr_request(LEADER_AND_ISR, 7)
    assert v7.is_k_raft_controller
    first = v7.topic_states[0].partition_states[0]
    assert (first.leader, first.leader_epoch, first.isr, first.partition_epoch, first.replicas, first.is_new) == (
        1,
        5,
        (1, 2),
        9,
        (1, 2, 3),
        True,
    )


def test_full_leader_and_isr_with_no_partitions_encodes() -> None:
    request = leader_and_isr_request(order(full=True), 7)
    roundtrip(request, 7)
    assert request.type_ == TYPE_FULL
    assert request.topic_states == ()


def test_leader_and_isr_rejects_an_unknown_version() -> None:
    with pytest.raises(ValueError, match="no version 8"):
        leader_and_isr_request(LEADER_AND_ISR, 8)


def test_leader_and_isr_v2_golden_bytes() -> None:
    one = order(partitions=(state("t", FOO, 0),))
    request = leader_and_isr_request(one, 2)
    golden = bytes.fromhex(
        "00000bb8"  # controller_id 3000
        "00000007"  # controller_epoch 7
        "0000000000001092"  # broker_epoch 4242 (v2+)
        "00000001"  # topic_states: 1
        "0001 74"  # - topic_name "t"
        "00000001"  # - partition_states: 1
        "00000000 00000007 00000001 00000005"  # -- partition 0, controller epoch 7, leader 1, leader epoch 5
        "00000002 00000001 00000002"  # -- isr [1, 2]
        "00000009"  # -- partition_epoch 9
        "00000003 00000001 00000002 00000003"  # -- replicas [1, 2, 3]
        "00"  # -- is_new false
        "00000000"  # live_leaders: none
    )
    assert codec(LeaderAndIsrRequest, 2).encode(request) == golden


# ---------------------------------------------------------------------- StopReplica
@pytest.mark.parametrize("version", range(5))
def test_stop_replica_every_version_encodes_and_carries_the_epochs(version: int) -> None:
    requests = stop_replica_requests(STOPS, version)
    for request in requests:
        roundtrip(request, version)
        assert request.controller_id == CONTROLLER_ID
        assert request.controller_epoch == CONTROLLER_EPOCH
        assert request.broker_epoch == (BROKER_EPOCH if version >= 1 else -1)
    assert len(requests) == (2 if version < 3 else 1)


def test_stop_replica_v0_splits_by_delete_flag_ungrouped() -> None:
    keep, delete = stop_replica_requests(STOPS, 0)
    assert keep == StopReplicaRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=CONTROLLER_EPOCH,
        delete_partitions=False,
        ungrouped_partitions=(
            StopReplicaRequestPartitionV0(topic_name="foo", partition_index=0),
            StopReplicaRequestPartitionV0(topic_name="foo", partition_index=1),
        ),
    )
    assert delete == StopReplicaRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=CONTROLLER_EPOCH,
        delete_partitions=True,
        ungrouped_partitions=(StopReplicaRequestPartitionV0(topic_name="bar", partition_index=3),),
    )


@pytest.mark.parametrize("version", [1, 2])
def test_stop_replica_v1_v2_group_partition_indexes_per_flag(version: int) -> None:
    keep, delete = stop_replica_requests(STOPS, version)
    assert keep == StopReplicaRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=CONTROLLER_EPOCH,
        broker_epoch=BROKER_EPOCH,
        delete_partitions=False,
        topics=(StopReplicaRequestTopicV1(name="foo", partition_indexes=(0, 1)),),
    )
    assert delete.delete_partitions
    assert delete.topics == (StopReplicaRequestTopicV1(name="bar", partition_indexes=(3,)),)


def test_stop_replica_with_one_flag_is_one_request() -> None:
    only_stops = order(stops=(STOPS.stops[0], STOPS.stops[2]))
    assert len(stop_replica_requests(only_stops, 1)) == 1
    assert stop_replica_requests(order(), 1) == []


@pytest.mark.parametrize("version", [3, 4])
def test_stop_replica_v3_plus_per_partition_epochs_and_flags(version: int) -> None:
    (request,) = stop_replica_requests(STOPS, version)
    assert request == StopReplicaRequest(
        controller_id=CONTROLLER_ID,
        is_k_raft_controller=version >= 4,
        controller_epoch=CONTROLLER_EPOCH,
        broker_epoch=BROKER_EPOCH,
        topic_states=(
            StopReplicaRequestTopicState(
                topic_name="foo",
                partition_states=(
                    StopReplicaRequestPartitionState(partition_index=0, leader_epoch=5, delete_partition=False),
                    StopReplicaRequestPartitionState(partition_index=1, leader_epoch=6, delete_partition=False),
                ),
            ),
            StopReplicaRequestTopicState(
                topic_name="bar",
                partition_states=(
                    StopReplicaRequestPartitionState(partition_index=3, leader_epoch=-2, delete_partition=True),
                ),
            ),
        ),
    )


def test_stop_replica_v3_golden_bytes() -> None:
    (request,) = stop_replica_requests(order(stops=(StopPartition("t", FOO, 1, leader_epoch=-2, delete=True),)), 3)
    golden = bytes.fromhex(
        "00000bb8"  # controller_id 3000
        "00000007"  # controller_epoch 7
        "0000000000001092"  # broker_epoch 4242
        "02"  # topic_states: compact array of 1
        "02 74"  # - topic_name compact "t"
        "02"  # - partition_states: compact array of 1
        "00000001 fffffffe 01 00"  # -- partition 1, leader epoch -2, delete, tags
        "00"  # - tags
        "00"  # tags
    )
    assert codec(StopReplicaRequest, 3).encode(request) == golden


def test_leader_and_isr_topic_state_shape() -> None:
    # guards the grouping helper against reordering partitions inside a topic
    request = leader_and_isr_request(LEADER_AND_ISR, 5)
    assert isinstance(request.topic_states[0], LeaderAndIsrRequestTopicState)
    assert [s.partition_index for s in request.topic_states[0].partition_states] == [0, 1]


# ---------------------------------------------------------------------- answers and versions
def test_common_version_is_the_highest_in_both_ranges() -> None:
    ours = Versions(0, 7)
    assert common_version(ours, Versions(0, 5)) == 5
    assert common_version(ours, Versions(2, 9)) == 7
    assert common_version(ours, Versions(8, 9)) is None
    assert common_version(ours, Versions(0, -1)) is None
    assert common_version(ours, None) is None


def test_response_errors_name_the_partitions_that_failed_in_every_shape() -> None:
    ok = LeaderAndIsrResponsePartitionError(topic_name="foo", partition_index=0, error_code=0)
    v4 = LeaderAndIsrResponse(
        partition_errors=(ok, LeaderAndIsrResponsePartitionError(topic_name="foo", partition_index=1, error_code=74))
    )
    assert response_errors(LEADER_AND_ISR, v4) == (0, [("foo", 1, 74)])
    v5 = LeaderAndIsrResponse(
        error_code=11,
        topics=(
            LeaderAndIsrResponseTopicError(
                topic_id=BAR,
                partition_errors=(
                    LeaderAndIsrResponsePartitionError(partition_index=0, error_code=11),  # the top-level error
                    LeaderAndIsrResponsePartitionError(partition_index=1, error_code=0),
                    LeaderAndIsrResponsePartitionError(partition_index=2, error_code=74),
                ),
            ),
            LeaderAndIsrResponseTopicError(  # a topic the order did not name: its id stands for it
                topic_id=UNKNOWN,
                partition_errors=(LeaderAndIsrResponsePartitionError(partition_index=3, error_code=3),),
            ),
        ),
    )
    assert response_errors(LEADER_AND_ISR, v5) == (11, [("bar", 2, 74), (str(UNKNOWN), 3, 3)])
    stop = StopReplicaResponse(
        partition_errors=(
            StopReplicaResponsePartitionError(topic_name="foo", partition_index=0, error_code=74),
            StopReplicaResponsePartitionError(topic_name="foo", partition_index=1, error_code=0),
        )
    )
    assert response_errors(STOPS, stop) == (0, [("foo", 0, 74)])
    assert response_errors(STOPS, StopReplicaResponse(error_code=77)) == (77, [])
