"""AlterPartition (KIP-497, KIP-704, KIP-841, KIP-903): hand-derived golden bytes for every version.

All versions are flexible: compact strings and arrays (length + 1, unsigned varint) and a tag
buffer after every struct. v0 names the topic and lists the new ISR as broker ids; v1 adds
LeaderRecoveryState; v2 names the topic by id; v3 lists the ISR with each member's broker epoch.
Each golden is also read by kio 0.5.0, the independent oracle, and its fields compared.
"""

from __future__ import annotations

import uuid

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.ids import BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.spec import Data
from tests.protocol.kio_bridge import from_kio, kio_decode, kio_payload_class

TOPIC_ID = uuid.UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")

HEAD = (
    "00000003"  # BrokerId 3
    "000000000000002a"  # BrokerEpoch 42
    "02"  # Topics: compact array of 1
)
PARTITION_HEAD = (
    "02"  # Partitions: compact array of 1
    "00000007"  # PartitionIndex 7
    "00000005"  # LeaderEpoch 5
)
TAIL = (
    "00"  # partition's tag buffer
    "00"  # topic's tag buffer
    "00"  # request's tag buffer
)


def request(version: int) -> AlterPartitionRequest:
    if version >= 3:
        members = tuple(
            AlterPartitionRequestBrokerState(broker_id=BrokerId(b), broker_epoch=BrokerEpoch(e))
            for b, e in ((3, 42), (1, 300))
        )
        partition = AlterPartitionRequestPartitionData(
            partition_index=7,
            leader_epoch=LeaderEpoch(5),
            new_isr_with_epochs=members,
            leader_recovery_state=1,
            partition_epoch=PartitionEpoch(9),
        )
    else:
        partition = AlterPartitionRequestPartitionData(
            partition_index=7,
            leader_epoch=LeaderEpoch(5),
            new_isr=(BrokerId(3), BrokerId(1)),
            leader_recovery_state=1 if version >= 1 else 0,
            partition_epoch=PartitionEpoch(9),
        )
    topic = (
        AlterPartitionRequestTopicData(topic_id=TOPIC_ID, partitions=(partition,))
        if version >= 2
        else AlterPartitionRequestTopicData(topic_name="orders", partitions=(partition,))
    )
    return AlterPartitionRequest(broker_id=BrokerId(3), broker_epoch=BrokerEpoch(42), topics=(topic,))


REQUEST_GOLDEN = {
    0: HEAD
    + "076f7264657273"  # TopicName: compact string "orders" (6 + 1)
    + PARTITION_HEAD
    + "03" + "00000003" + "00000001"  # NewIsr: compact array [3, 1]
    + "00000009"  # PartitionEpoch 9
    + TAIL,
    1: HEAD
    + "076f7264657273"  # TopicName "orders"
    + PARTITION_HEAD
    + "03" + "00000003" + "00000001"  # NewIsr [3, 1]
    + "01"  # LeaderRecoveryState 1 (RECOVERING)
    + "00000009"  # PartitionEpoch 9
    + TAIL,
    2: HEAD
    + "000102030405060708090a0b0c0d0e0f"  # TopicId
    + PARTITION_HEAD
    + "03" + "00000003" + "00000001"  # NewIsr [3, 1]
    + "01"  # LeaderRecoveryState 1
    + "00000009"  # PartitionEpoch 9
    + TAIL,
    3: HEAD
    + "000102030405060708090a0b0c0d0e0f"  # TopicId
    + PARTITION_HEAD
    + "03"  # NewIsrWithEpochs: compact array of 2
    + "00000003" + "000000000000002a" + "00"  # broker 3, epoch 42, tag buffer
    + "00000001" + "000000000000012c" + "00"  # broker 1, epoch 300, tag buffer
    + "01"  # LeaderRecoveryState 1
    + "00000009"  # PartitionEpoch 9
    + TAIL,
}  # fmt: skip


def response(version: int) -> AlterPartitionResponse:
    partitions = (
        AlterPartitionResponsePartitionData(
            partition_index=7,
            error_code=0,
            leader_id=3,
            leader_epoch=5,
            isr=(3, 1),
            leader_recovery_state=1 if version >= 1 else 0,
            partition_epoch=10,
        ),
        AlterPartitionResponsePartitionData(partition_index=8, error_code=108),  # NEW_LEADER_ELECTED
    )
    topic = (
        AlterPartitionResponseTopicData(topic_id=TOPIC_ID, partitions=partitions)
        if version >= 2
        else AlterPartitionResponseTopicData(topic_name="orders", partitions=partitions)
    )
    return AlterPartitionResponse(throttle_time_ms=12, error_code=0, topics=(topic,))


def _response_golden(version: int) -> str:
    recovery = "01" if version >= 1 else ""  # LeaderRecoveryState, v1+
    recovery_default = "00" if version >= 1 else ""
    topic = "000102030405060708090a0b0c0d0e0f" if version >= 2 else "076f7264657273"  # TopicId / "orders"
    return (
        "0000000c"  # ThrottleTimeMs 12
        "0000"  # ErrorCode 0
        "02"  # Topics: compact array of 1
        + topic
        + "03"  # Partitions: compact array of 2
        + "00000007" + "0000" + "00000003" + "00000005"  # index 7, error 0, leader 3, leader epoch 5
        + "03" + "00000003" + "00000001"  # Isr [3, 1]
        + recovery
        + "0000000a"  # PartitionEpoch 10
        + "00"  # tag buffer
        + "00000008" + "006c" + "00000000" + "00000000"  # index 8, error 108, leader 0, leader epoch 0
        + "01"  # Isr: empty compact array
        + recovery_default
        + "00000000"  # PartitionEpoch 0
        + "00"  # tag buffer
        + "00"  # topic's tag buffer
        + "00"  # response's tag buffer
    )  # fmt: skip


VERSIONS = [0, 1, 2, 3]


@pytest.mark.parametrize("version", VERSIONS)
def test_request_golden(version: int) -> None:
    golden = bytes.fromhex(REQUEST_GOLDEN[version])
    assert codec(AlterPartitionRequest, version).encode(request(version)) == golden
    assert codec(AlterPartitionRequest, version).decode_exact(golden) == request(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_response_golden(version: int) -> None:
    golden = bytes.fromhex(_response_golden(version))
    assert codec(AlterPartitionResponse, version).encode(response(version)) == golden
    assert codec(AlterPartitionResponse, version).decode_exact(golden) == response(version)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["request", "response"])
def test_kio_reads_every_golden_as_the_same_message(version: int, kind: str) -> None:
    ours: type[Data] = AlterPartitionRequest if kind == "request" else AlterPartitionResponse
    golden = bytes.fromhex(REQUEST_GOLDEN[version] if kind == "request" else _response_golden(version))
    kio_cls = kio_payload_class(56, version, kind)
    assert kio_cls is not None
    expected = request(version) if kind == "request" else response(version)
    assert from_kio(kio_decode(kio_cls, golden), ours) == expected


def test_version_rules() -> None:
    # v3 has no NewIsr (not ignorable): a broker id list cannot be sent there, nor epochs before v3
    with pytest.raises(EncodeError, match="new_isr is not in version 3"):
        codec(AlterPartitionRequest, 3).encode(request(2))
    with pytest.raises(EncodeError, match="new_isr_with_epochs is not in version 2"):
        codec(AlterPartitionRequest, 2).encode(request(3))
    # v0 has no LeaderRecoveryState (not ignorable in the request): RECOVERING cannot be sent
    with pytest.raises(EncodeError, match="leader_recovery_state is not in version 0"):
        codec(AlterPartitionRequest, 0).encode(request(1))
