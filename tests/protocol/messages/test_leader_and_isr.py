"""LeaderAndIsr (api key 4): hand-derived golden bytes for the ungrouped (v1) and grouped (v7)
layouts of the request and for both response layouts (v0, v5)."""

import uuid

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrRequestLiveLeader,
    LeaderAndIsrRequestPartitionState,
    LeaderAndIsrRequestTopicState,
    LeaderAndIsrResponse,
    LeaderAndIsrResponsePartitionError,
    LeaderAndIsrResponseTopicError,
)

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
LIVE = (LeaderAndIsrRequestLiveLeader(broker_id=1, host_name="h", port=9092),)


def test_request_v1_golden_ungrouped() -> None:
    message = LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=(
            LeaderAndIsrRequestPartitionState(
                topic_name="t",
                partition_index=0,
                controller_epoch=2,
                leader=1,
                leader_epoch=5,
                isr=(1, 2),
                partition_epoch=7,
                replicas=(1, 2),
                is_new=True,
            ),
        ),
        live_leaders=LIVE,
    )
    golden = bytes.fromhex(
        "00000001"  # controller_id 1
        "00000002"  # controller_epoch 2 (no broker_epoch before v2)
        "00000001"  # ungrouped_partition_states: int32 count 1
        "0001 74"  # - topic_name string "t" (v0-1 only)
        "00000000"  # - partition_index 0
        "00000002"  # - controller_epoch 2
        "00000001"  # - leader 1
        "00000005"  # - leader_epoch 5
        "00000002 00000001 00000002"  # - isr: int32 count 2, [1, 2]
        "00000007"  # - partition_epoch 7
        "00000002 00000001 00000002"  # - replicas: int32 count 2, [1, 2]
        "01"  # - is_new true (v1+)
        "00000001"  # live_leaders: int32 count 1
        "00000001"  # - broker_id 1
        "0001 68"  # - host_name string "h"
        "00002384"  # - port 9092
    )
    assert codec(LeaderAndIsrRequest, 1).encode(message) == golden
    assert codec(LeaderAndIsrRequest, 1).decode_exact(golden) == message


def test_request_v7_golden_grouped() -> None:
    message = LeaderAndIsrRequest(
        controller_id=1,
        is_k_raft_controller=True,
        controller_epoch=2,
        broker_epoch=10,
        type_=1,
        topic_states=(
            LeaderAndIsrRequestTopicState(
                topic_name="t",
                topic_id=TOPIC_ID,
                partition_states=(
                    LeaderAndIsrRequestPartitionState(
                        partition_index=0,
                        controller_epoch=2,
                        leader=1,
                        leader_epoch=5,
                        isr=(1,),
                        partition_epoch=7,
                        replicas=(1, 2),
                        adding_replicas=(2,),
                        leader_recovery_state=1,
                    ),
                ),
            ),
        ),
        live_leaders=LIVE,
    )
    golden = bytes.fromhex(
        "00000001"  # controller_id 1
        "01"  # is_k_raft_controller true (v7+, KIP-866)
        "00000002"  # controller_epoch 2
        "000000000000000a"  # broker_epoch 10 (v2+, KIP-380)
        "01"  # type_ int8 1 = incremental (v5+)
        "02"  # topic_states: compact array, uvarint 1+1
        "02 74"  # - topic_name compact string "t"
        "00112233445566778899aabbccddeeff"  # - topic_id uuid (v5+)
        "02"  # - partition_states: compact array, uvarint 1+1
        "00000000 00000002"  # -- partition_index 0, controller_epoch 2
        "00000001 00000005"  # -- leader 1, leader_epoch 5
        "02 00000001"  # -- isr: compact []int32 [1]
        "00000007"  # -- partition_epoch 7
        "03 00000001 00000002"  # -- replicas: compact []int32 [1, 2]
        "02 00000002"  # -- adding_replicas: compact []int32 [2] (v3+)
        "01"  # -- removing_replicas: compact []int32, empty
        "00"  # -- is_new false
        "01"  # -- leader_recovery_state int8 1 (v6+, KIP-704)
        "00"  # -- partition tag buffer
        "00"  # - topic tag buffer
        "02"  # live_leaders: compact array, uvarint 1+1
        "00000001 02 68 00002384"  # - broker_id 1, host_name "h", port 9092
        "00"  # - live leader tag buffer
        "00"  # body tag buffer
    )
    assert codec(LeaderAndIsrRequest, 7).encode(message) == golden
    assert codec(LeaderAndIsrRequest, 7).decode_exact(golden) == message


def test_version_rules() -> None:
    state = LeaderAndIsrRequestPartitionState(
        topic_name="t",
        partition_index=0,
        controller_epoch=2,
        leader=1,
        leader_epoch=5,
        isr=(1,),
        partition_epoch=7,
        replicas=(1,),
    )
    grouped = LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=2,
        topic_states=(LeaderAndIsrRequestTopicState(topic_name="t", partition_states=(state,)),),
        live_leaders=(),
    )
    # The per-partition topic name is ignorable: v2+ leave it out (the topic carries it).
    decoded = codec(LeaderAndIsrRequest, 2).decode_exact(codec(LeaderAndIsrRequest, 2).encode(grouped))
    assert decoded.topic_states[0].partition_states[0].topic_name == ""
    # isKRaftController is not ignorable: it cannot be sent before v7.
    with pytest.raises(EncodeError):
        codec(LeaderAndIsrRequest, 6).encode(
            LeaderAndIsrRequest(controller_id=1, is_k_raft_controller=True, controller_epoch=2, live_leaders=())
        )
    # v0-1 have no topic_states at all.
    with pytest.raises(EncodeError):
        codec(LeaderAndIsrRequest, 1).encode(grouped)


def test_response_v0_golden() -> None:
    message = LeaderAndIsrResponse(
        partition_errors=(LeaderAndIsrResponsePartitionError(topic_name="t", partition_index=0, error_code=0),)
    )
    golden = bytes.fromhex(
        "0000"  # error_code 0
        "00000001"  # partition_errors: int32 count 1
        "0001 74"  # - topic_name string "t" (v0-4)
        "00000000"  # - partition_index 0
        "0000"  # - error_code 0
    )
    assert codec(LeaderAndIsrResponse, 0).encode(message) == golden
    assert codec(LeaderAndIsrResponse, 0).decode_exact(golden) == message


def test_response_v5_golden() -> None:
    message = LeaderAndIsrResponse(
        topics=(
            LeaderAndIsrResponseTopicError(
                topic_id=TOPIC_ID,
                partition_errors=(
                    LeaderAndIsrResponsePartitionError(partition_index=0),
                    LeaderAndIsrResponsePartitionError(partition_index=1, error_code=11),
                ),
            ),
        )
    )
    golden = bytes.fromhex(
        "0000"  # error_code 0
        "02"  # topics: compact array, uvarint 1+1 (v5+)
        "00112233445566778899aabbccddeeff"  # - topic_id uuid
        "03"  # - partition_errors: compact array, uvarint 2+1
        "00000000 0000 00"  # -- partition_index 0, error_code 0, tag buffer
        "00000001 000b 00"  # -- partition_index 1, error_code 11 (STALE_CONTROLLER_EPOCH), tags
        "00"  # - topic tag buffer
        "00"  # body tag buffer
    )
    assert codec(LeaderAndIsrResponse, 5).encode(message) == golden
    assert codec(LeaderAndIsrResponse, 5).decode_exact(golden) == message
