"""AlterPartition (v0 = AlterIsr): every row of semantics.md's table, in every version where it differs.

Setting: brokers 0, 1, 2 active; topic "t" with one partition, replicas [0, 1, 2], leader 0, ISR
[0, 1, 2], leader epoch 0, partition epoch 0 (unless a test says otherwise).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.messages.elect_leaders import UNCLEAN, ElectLeadersRequest, ElectLeadersRequestTopicPartitions
from protocol.records.metadata import PartitionChangeRecord, UnregisterBrokerRecord
from protocol.spec import Data

from ..harness import Harness

VERSIONS = [0, 1, 2, 3]
WITH_RECOVERY_STATE = [1, 2, 3]
RECOVERED, RECOVERING = 0, 1


def ineligible(version: int) -> ErrorCode:
    return ErrorCode.INELIGIBLE_REPLICA if version >= 2 else ErrorCode.OPERATION_NOT_ATTEMPTED


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.start_brokers(0, 1, 2)
    harness.create_topic("t", assignments=[[0, 1, 2]])
    return harness


def only_partition(response: AlterPartitionResponse) -> AlterPartitionResponsePartitionData:
    assert response.error_code == ErrorCode.NONE
    [topic] = response.topics
    [part] = topic.partitions
    return part


def assert_partition_failed(
    h: Harness, log_length: int, reply: tuple[AlterPartitionResponse, list[Data]], code: int
) -> None:
    """The partition failed with `code`, carrying only its index and error, and nothing was written."""
    response, records = reply
    assert only_partition(response) == AlterPartitionResponsePartitionData(partition_index=0, error_code=code)
    assert records == []
    assert len(h.log) == log_length


def topic_data(
    h: Harness, version: int, name: str, partitions: list[AlterPartitionRequestPartitionData]
) -> AlterPartitionRequestTopicData:
    return AlterPartitionRequestTopicData(
        topic_name=name if version < 2 else "",
        topic_id=h.topic_id(name) if version >= 2 else uuid.UUID(int=0),
        partitions=tuple(partitions),
    )


def make_recovering(h: Harness) -> None:
    """Leave "t" led by broker 1 after an unclean election: ISR [1], RECOVERING, leader epoch 2, partition epoch 3."""
    h.alter_isr("t", 0, [0])
    h.heartbeat(0, want_fence=True)  # the last ISR member stays, the partition goes leaderless
    assert (h.partition("t").leader, h.partition("t").isr) == (-1, (0,))
    request = ElectLeadersRequest(
        election_type=UNCLEAN, topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(0,)),)
    )
    h.send(request, 1)
    part = h.partition("t")
    assert (part.leader, part.isr, part.leader_recovery_state) == (1, (1,), RECOVERING)
    assert (part.leader_epoch, part.partition_epoch) == (2, 3)


# ---------------------------------------------------------------------- top level
@pytest.mark.parametrize("version", VERSIONS)
def test_empty_topic_list_is_an_empty_success_even_from_an_unknown_broker(h: Harness, version: int) -> None:
    log_length = len(h.log)
    response, records = h.send(AlterPartitionRequest(broker_id=42, broker_epoch=12345, topics=()), version)
    assert response == AlterPartitionResponse()
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_broker_is_stale_broker_epoch_with_no_topics(h: Harness, version: int) -> None:
    log_length = len(h.log)
    response, records = h.alter_isr("t", 0, [0, 1], version=version, broker_id=42, broker_epoch=0)
    assert response == AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("delta", [-1, 1], ids=["older", "newer"])
def test_broker_epoch_mismatch_is_stale_broker_epoch_with_no_topics(h: Harness, version: int, delta: int) -> None:
    log_length = len(h.log)
    response, records = h.alter_isr("t", 0, [0, 1], version=version, broker_epoch=h.epoch(0) + delta)
    assert response == AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert records == [] and len(h.log) == log_length
    assert h.partition("t").isr == (0, 1, 2)


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_topic_fails_every_partition_listed(h: Harness, version: int) -> None:
    data = [h.isr_data(version, index, [0], leader_epoch=0, partition_epoch=0) for index in (0, 1)]
    topic = AlterPartitionRequestTopicData(
        topic_name="missing" if version < 2 else "",
        topic_id=uuid.uuid4() if version >= 2 else uuid.UUID(int=0),
        partitions=tuple(data),
    )
    log_length = len(h.log)
    response, records = h.send(AlterPartitionRequest(broker_id=0, broker_epoch=h.epoch(0), topics=(topic,)), version)
    code = ErrorCode.UNKNOWN_TOPIC_ID if version >= 2 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert response == AlterPartitionResponse(
        topics=(
            AlterPartitionResponseTopicData(
                topic_name=topic.topic_name,
                topic_id=topic.topic_id,
                partitions=tuple(
                    AlterPartitionResponsePartitionData(partition_index=i, error_code=code) for i in (0, 1)
                ),
            ),
        )
    )
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_topic_is_looked_up_by_name_before_v2_and_by_id_from_v2(h: Harness, version: int) -> None:
    """Each request names the topic both ways, one of them wrong: only the version's key counts."""
    data = h.isr_data(version, 0, [0, 1], leader_epoch=0, partition_epoch=0)
    right_by_version = AlterPartitionRequestTopicData(
        topic_name="t" if version < 2 else "other",
        topic_id=h.topic_id("t") if version >= 2 else uuid.uuid4(),
        partitions=(data,),
    )
    response, records = h.send(
        AlterPartitionRequest(broker_id=0, broker_epoch=h.epoch(0), topics=(right_by_version,)), version
    )
    assert only_partition(response).error_code == ErrorCode.NONE
    assert [type(r) for r in records] == [PartitionChangeRecord]

    wrong_by_version = AlterPartitionRequestTopicData(
        topic_name="other" if version < 2 else "t",
        topic_id=uuid.uuid4() if version >= 2 else h.topic_id("t"),
        partitions=(h.isr_data(version, 0, [0], leader_epoch=0, partition_epoch=1),),
    )
    response, records = h.send(
        AlterPartitionRequest(broker_id=0, broker_epoch=h.epoch(0), topics=(wrong_by_version,)), version
    )
    code = ErrorCode.UNKNOWN_TOPIC_ID if version >= 2 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert only_partition(response) == AlterPartitionResponsePartitionData(partition_index=0, error_code=code)
    assert records == []


# ---------------------------------------------------------------------- rows a-h, in order
@pytest.mark.parametrize("version", VERSIONS)
def test_a_unknown_partition_index(h: Harness, version: int) -> None:
    data = h.isr_data(version, 7, [0], leader_epoch=0, partition_epoch=0)
    log_length = len(h.log)
    response, records = h.send(
        AlterPartitionRequest(broker_id=0, broker_epoch=h.epoch(0), topics=(topic_data(h, version, "t", [data]),)),
        version,
    )
    assert only_partition(response) == AlterPartitionResponsePartitionData(
        partition_index=7, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_b_leader_epoch_greater_is_not_controller(h: Harness, version: int) -> None:
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, leader_epoch=1)
    assert_partition_failed(h, log_length, reply, ErrorCode.NOT_CONTROLLER)


@pytest.mark.parametrize("version", VERSIONS)
def test_b_partition_epoch_greater_is_not_controller(h: Harness, version: int) -> None:
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, partition_epoch=1)
    assert_partition_failed(h, log_length, reply, ErrorCode.NOT_CONTROLLER)


@pytest.mark.parametrize("version", VERSIONS)
def test_b_partition_epoch_greater_wins_over_leader_epoch_smaller(h: Harness, version: int) -> None:
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, leader_epoch=-1, partition_epoch=1)
    assert_partition_failed(h, log_length, reply, ErrorCode.NOT_CONTROLLER)


@pytest.mark.parametrize("version", VERSIONS)
def test_b_comes_before_the_requester_check(h: Harness, version: int) -> None:
    """A follower ahead of the controller's epochs hears NOT_CONTROLLER, not INVALID_REQUEST."""
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, broker_id=1, leader_epoch=1, partition_epoch=0)
    assert_partition_failed(h, log_length, reply, ErrorCode.NOT_CONTROLLER)


@pytest.mark.parametrize("version", VERSIONS)
def test_c_stale_ex_leader_with_older_leader_epoch_is_fenced_not_invalid(h: Harness, version: int) -> None:
    h.heartbeat(0, want_fence=True)  # leadership moves to 1, leader epoch 1
    h.heartbeat(0)  # unfenced again, registered with the same epoch
    part = h.partition("t")
    assert (part.leader, part.leader_epoch) == (1, 1)
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1, 2], version=version, broker_id=0, leader_epoch=0)
    assert_partition_failed(h, log_length, reply, ErrorCode.FENCED_LEADER_EPOCH)


@pytest.mark.parametrize("version", VERSIONS)
def test_d_requester_not_the_leader_is_invalid_request(h: Harness, version: int) -> None:
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, broker_id=1)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("version", VERSIONS)
def test_e_partition_epoch_smaller_is_invalid_update_version_before_isr_content(h: Harness, version: int) -> None:
    h.alter_isr("t", 0, [0, 1], version=version)
    assert h.partition("t").partition_epoch == 1
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1, 9], version=version, partition_epoch=0)  # also a non-replica: row f
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_UPDATE_VERSION)


@pytest.mark.parametrize("version", VERSIONS)
def test_applied_request_resent_with_its_old_partition_epoch_is_invalid_update_version(
    h: Harness, version: int
) -> None:
    response, records = h.alter_isr("t", 0, [0, 1], version=version, partition_epoch=0)
    assert only_partition(response).error_code == ErrorCode.NONE and len(records) == 1
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, partition_epoch=0)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_UPDATE_VERSION)
    assert h.partition("t").partition_epoch == 1


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "isr",
    [[0, 1, 5], [0, 1, 1], [0, -1], [1, 2], []],
    ids=["non-replica", "duplicate", "negative", "no-leader", "empty"],
)
def test_f_bad_new_isr_is_invalid_request(h: Harness, version: int, isr: list[int]) -> None:
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, isr, version=version)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("version", VERSIONS)
def test_f_comes_before_eligibility(h: Harness, version: int) -> None:
    h.heartbeat(2, want_fence=True)
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 2, 7], version=version)  # 2 is fenced (h) and 7 no replica (f)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("version", WITH_RECOVERY_STATE)
def test_g_recovering_with_more_than_one_member_is_invalid_request(h: Harness, version: int) -> None:
    make_recovering(h)
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [1, 2], version=version, recovery=RECOVERING)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("version", WITH_RECOVERY_STATE)
def test_g_comes_before_eligibility(h: Harness, version: int) -> None:
    make_recovering(h)  # broker 0 is fenced now
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [1, 0], version=version, recovery=RECOVERING)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("version", WITH_RECOVERY_STATE)
def test_g_recovered_to_recovering_is_invalid_request(h: Harness, version: int) -> None:
    h.alter_isr("t", 0, [0], version=version)
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0], version=version, recovery=RECOVERING)  # ISR of one: only the transition fails
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize("version", WITH_RECOVERY_STATE)
def test_recovering_to_recovered_with_a_larger_isr_succeeds(h: Harness, version: int) -> None:
    make_recovering(h)
    response, records = h.alter_isr("t", 0, [1, 2], version=version, recovery=RECOVERED)
    tid = h.topic_id("t")
    assert only_partition(response) == AlterPartitionResponsePartitionData(
        partition_index=0, leader_id=1, leader_epoch=2, isr=(1, 2), leader_recovery_state=RECOVERED, partition_epoch=4
    )
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1, 2), leader_recovery_state=RECOVERED)]


@pytest.mark.parametrize("version", WITH_RECOVERY_STATE)
def test_recovering_stays_recovering_with_an_isr_of_one(h: Harness, version: int) -> None:
    make_recovering(h)
    log_length = len(h.log)
    response, records = h.alter_isr("t", 0, [1], version=version, recovery=RECOVERING)
    assert only_partition(response) == AlterPartitionResponsePartitionData(
        partition_index=0, leader_id=1, leader_epoch=2, isr=(1,), leader_recovery_state=RECOVERING, partition_epoch=3
    )
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", WITH_RECOVERY_STATE)
@pytest.mark.parametrize("byte", [2, -1, 25])
def test_leader_recovery_state_other_than_0_or_1_is_invalid_request(h: Harness, version: int, byte: int) -> None:
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1], version=version, recovery=byte)
    assert_partition_failed(h, log_length, reply, ErrorCode.INVALID_REQUEST)


# ---------------------------------------------------------------------- row h: eligibility
def _unregister(h: Harness, broker_id: int) -> None:
    h.commit([(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=h.epoch(broker_id)), 0)])


def _shut_down(h: Harness, broker_id: int) -> None:
    h.controlled_shutdown(broker_id)


def _fence(h: Harness, broker_id: int) -> None:
    h.heartbeat(broker_id, want_fence=True)


def _offline(h: Harness, broker_id: int) -> None:
    h.alter_replica_state(broker_id, "t", [0], OFFLINE)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "make_ineligible",
    [_unregister, _shut_down, _fence, _offline],
    ids=["unregistered", "shutdown", "fenced", "offline"],
)
def test_h_ineligible_member(h: Harness, version: int, make_ineligible: Callable[[Harness, int], None]) -> None:
    h.alter_isr("t", 0, [0, 1], version=version)
    make_ineligible(h, 2)
    assert h.partition("t").isr == (0, 1)
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0, 1, 2], version=version)
    assert_partition_failed(h, log_length, reply, ineligible(version))
    assert h.partition("t").isr == (0, 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_h_every_member_is_checked_even_the_leader(h: Harness, version: int) -> None:
    """The leader is stuck in controlled shutdown (no successor): even a no-op ISR is refused."""
    h.alter_isr("t", 0, [0], version=version)
    response, _ = h.controlled_shutdown(0)
    assert [p.topic_name for p in response.remaining_partitions] == ["t"]
    log_length = len(h.log)
    reply = h.alter_isr("t", 0, [0], version=version)
    assert_partition_failed(h, log_length, reply, ineligible(version))


def test_h_v3_member_broker_epoch_mismatch_is_ineligible(h: Harness) -> None:
    h.alter_isr("t", 0, [0, 1], version=3)
    log_length = len(h.log)
    for wrong in (h.epoch(2) - 1, h.epoch(2) + 1):
        reply = h.alter_isr("t", 0, [0, 1, 2], version=3, member_epochs={2: wrong})
        assert_partition_failed(h, log_length, reply, ErrorCode.INELIGIBLE_REPLICA)


@pytest.mark.parametrize("epoch_of_2", ["registered", "minus-one"])
def test_h_v3_member_broker_epoch_registered_or_minus_one_passes(h: Harness, epoch_of_2: str) -> None:
    h.alter_isr("t", 0, [0, 1], version=3)
    epochs = {0: h.epoch(0), 1: h.epoch(1), 2: h.epoch(2) if epoch_of_2 == "registered" else -1}
    response, records = h.alter_isr("t", 0, [0, 1, 2], version=3, member_epochs=epochs)
    assert only_partition(response).isr == (0, 1, 2)
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(0, 1, 2))]


@pytest.mark.parametrize("version", VERSIONS)
def test_an_offline_replica_is_eligible_again_once_online(h: Harness, version: int) -> None:
    h.alter_isr("t", 0, [0, 1], version=version)
    _offline(h, 2)
    h.alter_replica_state(2, "t", [0], ONLINE)
    response, records = h.alter_isr("t", 0, [0, 1, 2], version=version)
    assert only_partition(response).isr == (0, 1, 2)
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(0, 1, 2))]


# ---------------------------------------------------------------------- success and no-op
@pytest.mark.parametrize("version", VERSIONS)
def test_shrink_writes_one_change_and_answers_the_new_state(h: Harness, version: int) -> None:
    response, records = h.alter_isr("t", 0, [0, 1], version=version)
    assert only_partition(response) == AlterPartitionResponsePartitionData(
        partition_index=0,
        error_code=ErrorCode.NONE,
        leader_id=0,
        leader_epoch=0,
        isr=(0, 1),
        leader_recovery_state=RECOVERED,
        partition_epoch=1,
    )
    # exactly one record: the new ISR, no leader change (-2), recovery state unchanged (-1)
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(0, 1))]
    assert h.log[-1][1] == 0  # PartitionChangeRecord v0: no directories
    part = h.partition("t")
    assert (part.leader, part.leader_epoch, part.isr, part.partition_epoch) == (0, 0, (0, 1), 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_expand_keeps_the_leader_epoch_and_bumps_the_partition_epoch(h: Harness, version: int) -> None:
    h.alter_isr("t", 0, [0], version=version)
    response, records = h.alter_isr("t", 0, [0, 2, 1], version=version)  # order is kept as requested
    assert only_partition(response) == AlterPartitionResponsePartitionData(
        partition_index=0, leader_id=0, leader_epoch=0, isr=(0, 2, 1), partition_epoch=2
    )
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(0, 2, 1))]


@pytest.mark.parametrize("version", VERSIONS)
def test_no_op_writes_nothing_and_answers_the_current_state(h: Harness, version: int) -> None:
    h.alter_isr("t", 0, [0, 1], version=version)
    log_length = len(h.log)
    response, records = h.alter_isr("t", 0, [0, 1], version=version)
    assert only_partition(response) == AlterPartitionResponsePartitionData(
        partition_index=0, leader_id=0, leader_epoch=0, isr=(0, 1), partition_epoch=1
    )
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_partition_carries_only_index_and_error_next_to_a_success(version: int) -> None:
    h = Harness()
    h.start_brokers(0, 1, 2)
    h.create_topic("two", assignments=[[0, 1, 2], [0, 1, 2]])
    good = h.isr_data(version, 0, [0, 1], leader_epoch=0, partition_epoch=0)
    bad = h.isr_data(version, 1, [0, 1], leader_epoch=0, partition_epoch=5)
    request = AlterPartitionRequest(
        broker_id=0, broker_epoch=h.epoch(0), topics=(topic_data(h, version, "two", [good, bad]),)
    )
    response, records = h.send(request, version)
    [topic] = response.topics
    assert topic.partitions == (
        AlterPartitionResponsePartitionData(partition_index=0, leader_id=0, isr=(0, 1), partition_epoch=1),
        AlterPartitionResponsePartitionData(partition_index=1, error_code=ErrorCode.NOT_CONTROLLER),
    )
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("two"), isr=(0, 1))]
    assert h.partition("two", 1).isr == (0, 1, 2)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_partition_named_twice_is_invalid_request_the_second_time(h: Harness, version: int) -> None:
    first = h.isr_data(version, 0, [0, 1], leader_epoch=0, partition_epoch=0)
    second = h.isr_data(version, 0, [0], leader_epoch=0, partition_epoch=0)
    request = AlterPartitionRequest(
        broker_id=0, broker_epoch=h.epoch(0), topics=(topic_data(h, version, "t", [first, second]),)
    )
    response, records = h.send(request, version)
    [topic] = response.topics
    assert topic.partitions[1] == AlterPartitionResponsePartitionData(
        partition_index=0, error_code=ErrorCode.INVALID_REQUEST
    )
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(0, 1))]
