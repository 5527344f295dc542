"""StopReplica (api key 5): hand-derived golden bytes for each request layout (v0 ungrouped,
v1 grouped by topic, v3 per-partition states) and for the response."""

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.stop_replica import (
    StopReplicaRequest,
    StopReplicaRequestPartitionState,
    StopReplicaRequestPartitionV0,
    StopReplicaRequestTopicState,
    StopReplicaRequestTopicV1,
    StopReplicaResponse,
    StopReplicaResponsePartitionError,
)


def test_request_v0_golden() -> None:
    message = StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        delete_partitions=True,
        ungrouped_partitions=(StopReplicaRequestPartitionV0(topic_name="t", partition_index=0),),
    )
    golden = bytes.fromhex(
        "00000001"  # controller_id 1
        "00000002"  # controller_epoch 2 (no broker_epoch in v0)
        "01"  # delete_partitions true
        "00000001"  # ungrouped_partitions: int32 count 1
        "0001 74"  # - topic_name string "t"
        "00000000"  # - partition_index 0
    )
    assert codec(StopReplicaRequest, 0).encode(message) == golden
    assert codec(StopReplicaRequest, 0).decode_exact(golden) == message


def test_request_v1_golden() -> None:
    message = StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=10,
        delete_partitions=False,
        topics=(StopReplicaRequestTopicV1(name="t", partition_indexes=(0, 1)),),
    )
    golden = bytes.fromhex(
        "00000001"  # controller_id 1
        "00000002"  # controller_epoch 2
        "000000000000000a"  # broker_epoch 10 (v1+, KIP-380)
        "00"  # delete_partitions false
        "00000001"  # topics: int32 count 1
        "0001 74"  # - name string "t"
        "00000002 00000000 00000001"  # - partition_indexes: int32 count 2, [0, 1]
    )
    assert codec(StopReplicaRequest, 1).encode(message) == golden
    assert codec(StopReplicaRequest, 1).decode_exact(golden) == message


def test_request_v3_golden_with_leader_epochs_and_delete_flags() -> None:
    message = StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=10,
        topic_states=(
            StopReplicaRequestTopicState(
                topic_name="t",
                partition_states=(
                    StopReplicaRequestPartitionState(partition_index=0, leader_epoch=5, delete_partition=False),
                    StopReplicaRequestPartitionState(partition_index=1, leader_epoch=-2, delete_partition=True),
                ),
            ),
        ),
    )
    golden = bytes.fromhex(
        "00000001"  # controller_id 1
        "00000002"  # controller_epoch 2
        "000000000000000a"  # broker_epoch 10 (no delete_partitions from v3 on)
        "02"  # topic_states: compact array, uvarint 1+1
        "02 74"  # - topic_name compact string "t"
        "03"  # - partition_states: compact array, uvarint 2+1
        "00000000 00000005 00"  # -- partition_index 0, leader_epoch 5 (KIP-570), delete false
        "00"  # -- partition tag buffer
        "00000001 fffffffe 01"  # -- partition_index 1, leader_epoch -2 (topic deletion), delete true
        "00"  # -- partition tag buffer
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    assert codec(StopReplicaRequest, 3).encode(message) == golden
    assert codec(StopReplicaRequest, 3).decode_exact(golden) == message


def test_layouts_do_not_mix() -> None:
    v3 = StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        topic_states=(StopReplicaRequestTopicState(topic_name="t"),),
    )
    with pytest.raises(EncodeError):
        codec(StopReplicaRequest, 2).encode(v3)
    with pytest.raises(EncodeError):
        codec(StopReplicaRequest, 3).encode(
            StopReplicaRequest(controller_id=1, controller_epoch=2, delete_partitions=True)
        )
    # Kafka's default leader epoch for a partition state is -1 (no epoch).
    assert StopReplicaRequestPartitionState().leader_epoch == -1


def test_response_v3_golden() -> None:
    message = StopReplicaResponse(
        error_code=0,
        partition_errors=(StopReplicaResponsePartitionError(topic_name="t", partition_index=0, error_code=74),),
    )
    golden = bytes.fromhex(
        "0000"  # error_code 0
        "02"  # partition_errors: compact array, uvarint 1+1
        "02 74"  # - topic_name compact string "t"
        "00000000"  # - partition_index 0
        "004a"  # - error_code 74 (FENCED_LEADER_EPOCH, KIP-570)
        "00"  # - partition tag buffer
        "00"  # body tag buffer
    )
    assert codec(StopReplicaResponse, 3).encode(message) == golden
    assert codec(StopReplicaResponse, 3).decode_exact(golden) == message
