"""CreateTopics (v2-7) with striped, rack-aware placement, and DeleteTopics (v1-6)."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from controller.ops.changes import versioned
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)
from protocol.records.metadata import (
    UNASSIGNED_DIRECTORY,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RemoveTopicRecord,
    TopicRecord,
)
from protocol.registry import encode_response
from protocol.spec import Data

from ..harness import Harness

CREATE_VERSIONS = [2, 3, 4, 5, 6, 7]
DELETE_BY_NAME_VERSIONS = [1, 2, 3, 4, 5]


def cluster(*broker_ids: int, racks: dict[int, str] | None = None, seed: int = 0) -> Harness:
    h = Harness(seed=seed)
    h.start_brokers(*broker_ids, racks=racks)
    return h


def manual(name: str, *assignments: list[int]) -> CreateTopicsRequestCreatableTopic:
    return CreateTopicsRequestCreatableTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=tuple(
            CreateTopicsRequestCreatableReplicaAssignment(partition_index=i, broker_ids=tuple(a))
            for i, a in enumerate(assignments)
        ),
    )


def create(
    h: Harness, *topics: CreateTopicsRequestCreatableTopic, version: int = 7, validate_only: bool = False
) -> tuple[CreateTopicsResponse, list[Data]]:
    response, records = h.send(CreateTopicsRequest(topics=topics, validate_only=validate_only), version)
    assert isinstance(response, CreateTopicsResponse)
    return response, records


def assert_rejected(
    h: Harness, topic: CreateTopicsRequestCreatableTopic, code: int, message: str | None = None
) -> None:
    log_length = len(h.log)
    response, records = create(h, topic)
    [result] = response.topics
    assert (result.name, result.error_code) == (topic.name, code)
    if message is not None:
        assert result.error_message == message
    assert records == [] and len(h.log) == log_length
    assert h.core.state.replication.topic_by_name(topic.name) is None or code == ErrorCode.TOPIC_ALREADY_EXISTS


def partition_record(topic_id: uuid.UUID, index: int, replicas: list[int], isr: list[int]) -> PartitionRecord:
    return PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=tuple(replicas),
        isr=tuple(isr),
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
        directories=(UNASSIGNED_DIRECTORY,) * len(replicas),
    )


# ====================================================================== CreateTopics
@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_create_writes_the_topic_and_its_partitions(version: int) -> None:
    h = cluster(0, 1, 2)
    offset = h.next_offset
    response, records = create(h, manual("t", [0, 1, 2], [1, 2, 0]), version=version)
    [result] = response.topics
    topic_id = result.topic_id
    assert result == CreateTopicsResponseCreatableTopicResult(
        name="t", topic_id=topic_id, error_message=None, num_partitions=2, replication_factor=3
    )
    assert topic_id != uuid.UUID(int=0)
    assert records == [
        TopicRecord(name="t", topic_id=topic_id),
        partition_record(topic_id, 0, [0, 1, 2], [0, 1, 2]),
        partition_record(topic_id, 1, [1, 2, 0], [1, 2, 0]),
    ]
    assert [version for _, version, _ in h.log[offset:]] == [0, 1, 1]
    assert h.topic_id("t") == topic_id


@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_new_partition_isr_is_its_active_replicas_and_the_first_active_one_leads(version: int) -> None:
    h = cluster(0, 1, 2, 3)
    h.heartbeat(0, want_fence=True)
    h.controlled_shutdown(1)
    response, records = create(h, manual("t", [0, 1, 2, 3]), version=version)
    topic_id = response.topics[0].topic_id
    assert records[1] == partition_record(topic_id, 0, [0, 1, 2, 3], [2, 3])
    part = h.partition("t")
    assert (part.leader, part.isr, part.leader_epoch, part.partition_epoch) == (2, (2, 3), 0, 0)


@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_taken_name_is_topic_already_exists(version: int) -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", replication_factor=1)
    log_length = len(h.log)
    response, records = create(h, manual("t", [0]), version=version)
    assert response.topics == (
        CreateTopicsResponseCreatableTopicResult(
            name="t", error_code=ErrorCode.TOPIC_ALREADY_EXISTS, error_message="Topic 't' already exists."
        ),
    )
    assert records == [] and len(h.log) == log_length


def test_too_few_active_brokers_is_invalid_replication_factor() -> None:
    h = cluster(0, 1, 2)
    h.heartbeat(2, want_fence=True)
    assert_rejected(h, CreateTopicsRequestCreatableTopic(name="t", num_partitions=1, replication_factor=3), 38)


def test_all_brokers_fenced_message() -> None:
    h = Harness()
    h.register(0)
    h.register(1)
    topic = CreateTopicsRequestCreatableTopic(name="t", num_partitions=1, replication_factor=1)
    assert_rejected(
        h,
        topic,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced.",
    )


def test_all_brokers_fenced_or_shutting_down_message() -> None:
    h = cluster(0)
    h.register(1)  # fenced
    h.controlled_shutdown(0)
    topic = CreateTopicsRequestCreatableTopic(name="t", num_partitions=2, replication_factor=2)
    assert_rejected(
        h,
        topic,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 2 time(s): All brokers are currently fenced or in controlled shutdown.",
    )


@pytest.mark.parametrize(
    "assignments",
    [[[0, 1, 7]], [[0, 1], []], [[0, 0, 1]]],
    ids=["unregistered", "empty", "duplicate"],
)
def test_bad_manual_assignment_is_invalid_replica_assignment(assignments: list[list[int]]) -> None:
    h = cluster(0, 1, 2)
    assert_rejected(h, manual("t", *assignments), ErrorCode.INVALID_REPLICA_ASSIGNMENT)


def test_replica_lists_of_unequal_length_are_invalid_replica_assignment() -> None:
    h = cluster(0, 1, 2)
    assert_rejected(
        h,
        manual("t", [0, 1], [1]),
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Partition 1 has 1 replica(s), unlike partition 0's 2.",
    )


def test_more_replicas_than_registered_brokers_is_invalid_replica_assignment() -> None:
    h = cluster(0, 1, 2)
    assert_rejected(
        h,
        manual("t", list(range(100_000))),
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Partition 0 has 100000 replicas, more than the 3 registered brokers.",
    )


def test_a_negative_replica_id_is_invalid_replica_assignment_even_if_a_log_registered_it() -> None:
    """A log written before negative broker ids were refused may hold one, active: still never assigned."""
    h = cluster(0)
    endpoint = RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="localhost", port=9999)
    old = RegisterBrokerRecord(
        broker_id=-1, incarnation_id=uuid.uuid4(), broker_epoch=h.next_offset, end_points=(endpoint,), fenced=False
    )
    h.commit([versioned(old)])
    assert h.core.state.cluster.is_active(-1)
    assert_rejected(
        h, manual("t", [0, -1]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partition 0 names negative broker id(s) [-1]."
    )


def test_manual_assignment_with_no_active_broker_is_invalid_replica_assignment() -> None:
    h = cluster(0, 1, 2)
    h.heartbeat(1, want_fence=True)
    h.heartbeat(2, want_fence=True)
    assert_rejected(h, manual("t", [1, 2]), ErrorCode.INVALID_REPLICA_ASSIGNMENT)


@pytest.mark.parametrize(
    ("partitions", "factor", "code", "message"),
    [
        (0, 1, ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
        (-2, 1, ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
        (
            1,
            0,
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            1,
            -2,
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            0,
            0,
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
    ],
    ids=["zero-partitions", "negative-partitions", "zero-factor", "negative-factor", "factor-checked-first"],
)
def test_non_positive_counts_other_than_the_default_are_refused_like_kafka(
    partitions: int, factor: int, code: ErrorCode, message: str
) -> None:
    h = cluster(0, 1, 2)
    topic = CreateTopicsRequestCreatableTopic(name="t", num_partitions=partitions, replication_factor=factor)
    assert_rejected(h, topic, code, message)


@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_minus_one_asks_for_the_default_counts(version: int) -> None:
    h = cluster(0, 1, 2)
    response, records = create(
        h, CreateTopicsRequestCreatableTopic(name="t", num_partitions=-1, replication_factor=-1), version=version
    )
    [result] = response.topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 1, 1)
    assert [type(r) for r in records] == [TopicRecord, PartitionRecord]


@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_validate_only_answers_without_writing(version: int) -> None:
    h = cluster(0, 1, 2)
    log_length = len(h.log)
    topic = CreateTopicsRequestCreatableTopic(name="t", num_partitions=3, replication_factor=2)
    response, records = create(h, topic, version=version, validate_only=True)
    [result] = response.topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 3, 2)
    assert records == [] and len(h.log) == log_length
    assert h.core.state.replication.topic_by_name("t") is None
    response, _ = create(h, manual("t", [0, 9]), version=version, validate_only=True)
    assert response.topics[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


@pytest.mark.parametrize("twice", [False, True])
def test_a_long_illegal_name_is_refused_with_a_message_every_answer_can_hold(twice: bool) -> None:
    """A name of 32,760 bytes fits the request's STRING; quoted whole, the refusal's message would
    not fit the answer's (int16 length) and the answer could not be encoded: the message cuts it."""
    h = cluster(0, 1, 2)
    topic = CreateTopicsRequestCreatableTopic(name="x" * 32_760, num_partitions=1, replication_factor=1)
    response, records = create(h, *([topic, topic] if twice else [topic]), version=4)
    code = ErrorCode.INVALID_REQUEST if twice else ErrorCode.INVALID_TOPIC_EXCEPTION
    assert {(r.name, r.error_code) for r in response.topics} == {(topic.name, code)} and records == []
    message = response.topics[0].error_message
    if twice:
        assert message == "Duplicate topic name."  # Kafka's words quote no name
    else:
        assert message is not None and "x" * 249 + "... (32760 characters)" in message and len(message) < 320
    assert encode_response(response, 4, 1)  # the answer fits its frame


def test_one_bad_topic_does_not_stop_the_others() -> None:
    h = cluster(0, 1, 2)
    response, records = create(h, manual("bad", [9]), manual("good", [0, 1]))
    assert [(r.name, r.error_code) for r in response.topics] == [("bad", 39), ("good", 0)]
    assert [type(r) for r in records] == [TopicRecord, PartitionRecord]
    assert records[0] == TopicRecord(name="good", topic_id=response.topics[1].topic_id)


def test_the_metadata_logs_own_topic_is_never_created() -> None:
    """Kafka's ControllerApis refuses `__cluster_metadata` before anything else is decided."""
    h = cluster(0, 1, 2)
    message = "Creation of internal topic __cluster_metadata is prohibited."
    assert_rejected(h, manual("__cluster_metadata", [0, 1, 2]), ErrorCode.INVALID_REQUEST, message)


def test_a_name_given_twice_is_refused_both_times_in_kafkas_words() -> None:
    h = cluster(0, 1, 2)
    response, records = create(h, manual("t", [0]), manual("t", [1]), manual("u", [2]))
    assert [(r.name, r.error_code, r.error_message) for r in response.topics] == [
        ("t", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ("t", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ("u", ErrorCode.NONE, None),
    ]
    assert [type(r) for r in records] == [TopicRecord, PartitionRecord]


# ---------------------------------------------------------------------- placement
def _placed(h: Harness, name: str) -> list[tuple[int, ...]]:
    topic = h.core.state.replication.topic_by_name(name)
    assert topic is not None
    return [topic.partitions[i].replicas for i in sorted(topic.partitions)]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    ("brokers", "partitions", "factor"),
    [(3, 3, 3), (3, 6, 2), (3, 9, 1), (6, 6, 3), (6, 12, 3), (6, 18, 2)],
)
def test_placement_spreads_leaders_and_replicas_evenly(seed: int, brokers: int, partitions: int, factor: int) -> None:
    h = cluster(*range(brokers), seed=seed)
    topic_id = h.create_topic("t", partitions=partitions, replication_factor=factor)
    placed = _placed(h, "t")
    assert len(placed) == partitions and all(len(set(r)) == len(r) == factor for r in placed)
    leaders = Counter(r[0] for r in placed)
    replicas = Counter(b for r in placed for b in r)
    assert leaders == dict.fromkeys(range(brokers), partitions // brokers)
    assert replicas == dict.fromkeys(range(brokers), partitions * factor // brokers)
    for index, replicas_of in enumerate(placed):
        part = h.partition("t", index)
        assert (part.isr, part.leader) == (replicas_of, replicas_of[0])
    assert topic_id == h.topic_id("t")


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("factor", [2, 3])
def test_placement_is_rack_aware_with_even_racks(seed: int, factor: int) -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "b", 5: "c"}
    h = cluster(*racks, racks=racks, seed=seed)
    h.create_topic("t", partitions=12, replication_factor=factor)
    placed = _placed(h, "t")
    for replicas in placed:
        assert len({racks[b] for b in replicas}) == factor, (replicas, [racks[b] for b in replicas])
    assert Counter(r[0] for r in placed) == dict.fromkeys(racks, 2)
    assert Counter(b for r in placed for b in r) == dict.fromkeys(racks, 2 * factor)


@pytest.mark.parametrize("seed", range(12))
def test_placement_uses_every_rack_before_repeating_one(seed: int) -> None:
    racks = {0: "a", 1: "a", 2: "a", 3: "a", 4: "b", 5: "b"}
    h = cluster(*racks, racks=racks, seed=seed)
    h.create_topic("t", partitions=12, replication_factor=3)
    for replicas in _placed(h, "t"):
        assert {racks[b] for b in replicas} == {"a", "b"}, replicas
        assert len(set(replicas)) == 3


@pytest.mark.parametrize("seed", range(4))
def test_placement_uses_only_active_brokers(seed: int) -> None:
    h = cluster(0, 1, 2, 3, seed=seed)
    h.heartbeat(1, want_fence=True)
    h.controlled_shutdown(3)
    h.create_topic("t", partitions=4, replication_factor=2)
    assert {b for r in _placed(h, "t") for b in r} == {0, 2}


# ====================================================================== DeleteTopics
def delete(
    h: Harness, version: int, *names: str, ids: tuple[uuid.UUID, ...] = ()
) -> tuple[DeleteTopicsResponse, list[Data]]:
    if version >= 6:
        states = [DeleteTopicsRequestDeleteTopicState(name=n) for n in names]
        states += [DeleteTopicsRequestDeleteTopicState(topic_id=i) for i in ids]
        request = DeleteTopicsRequest(topics=tuple(states))
    else:
        request = DeleteTopicsRequest(topic_names=names)
    response, records = h.send(request, version)
    assert isinstance(response, DeleteTopicsResponse)
    return response, records


@pytest.mark.parametrize("version", [*DELETE_BY_NAME_VERSIONS, 6])
def test_delete_by_name_writes_remove_topic_record(version: int) -> None:
    h = cluster(0, 1, 2)
    topic_id = h.create_topic("t", partitions=2)
    response, records = delete(h, version, "t")
    assert response.responses == (DeleteTopicsResponseDeletableTopicResult(name="t", topic_id=topic_id),)
    assert records == [RemoveTopicRecord(topic_id=topic_id)]
    assert h.core.state.replication.topic_by_name("t") is None
    assert not any(h.core.state.replication.hosted_by(b) for b in (0, 1, 2))


def test_v6_delete_by_id_writes_remove_topic_record() -> None:
    h = cluster(0, 1, 2)
    topic_id = h.create_topic("t")
    response, records = delete(h, 6, ids=(topic_id,))
    assert response.responses == (DeleteTopicsResponseDeletableTopicResult(name="t", topic_id=topic_id),)
    assert records == [RemoveTopicRecord(topic_id=topic_id)]


@pytest.mark.parametrize("version", [*DELETE_BY_NAME_VERSIONS, 6])
def test_delete_unknown_name_is_unknown_topic_or_partition(version: int) -> None:
    h = cluster(0)
    log_length = len(h.log)
    response, records = delete(h, version, "missing")
    [result] = response.responses
    assert (result.name, result.error_code) == ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert records == [] and len(h.log) == log_length


def test_v6_delete_unknown_id_is_unknown_topic_id() -> None:
    h = cluster(0)
    missing = uuid.uuid4()
    response, records = delete(h, 6, ids=(missing,))
    [result] = response.responses
    assert (result.topic_id, result.error_code) == (missing, ErrorCode.UNKNOWN_TOPIC_ID)
    assert records == []


def test_a_topic_named_twice_is_removed_once() -> None:
    h = cluster(0)
    topic_id = h.create_topic("t", replication_factor=1)
    response, records = delete(h, 6, "t", ids=(topic_id,))
    assert [r.error_code for r in response.responses] == [0, 0]
    assert records == [RemoveTopicRecord(topic_id=topic_id)]


def test_a_deleted_name_can_be_created_again_with_a_new_id() -> None:
    h = cluster(0)
    first = h.create_topic("t", replication_factor=1)
    delete(h, 5, "t")
    second = h.create_topic("t", replication_factor=1)
    assert second != first
