"""The bound on user operations (Kafka's MAX_RECORDS_PER_USER_OP, `max_records_per_operation`) for
CreateTopics and DeleteTopics: an oversized request is refused as a whole with POLICY_VIOLATION
for each of its topics, nothing written, and CreateTopics counts before any per-partition work."""

from __future__ import annotations

import dataclasses
import tracemalloc

import pytest

from controller.ops import topics
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import CreateTopicsRequestCreatableTopic
from protocol.records.metadata import PartitionRecord, RemoveTopicRecord, TopicRecord

from ..harness import Harness
from .test_topics import CREATE_VERSIONS, DELETE_BY_NAME_VERSIONS, cluster, create, delete, manual

TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def limited(limit: int, *broker_ids: int) -> Harness:
    h = cluster(*broker_ids)
    set_limit(h, limit)
    return h


def set_limit(h: Harness, limit: int) -> None:
    h.core.state.config = dataclasses.replace(h.core.state.config, max_records_per_operation=limit)


def counted(name: str, partitions: int, replication_factor: int = 1) -> CreateTopicsRequestCreatableTopic:
    return CreateTopicsRequestCreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor
    )


def assert_refused(
    h: Harness,
    *request: CreateTopicsRequestCreatableTopic,
    message: str,
    version: int = 7,
    validate_only: bool = False,
) -> None:
    log_length = len(h.log)
    response, records = create(h, *request, version=version, validate_only=validate_only)
    assert [(r.name, r.error_code, r.error_message) for r in response.topics] == [
        (t.name, ErrorCode.POLICY_VIOLATION, message) for t in request
    ]
    assert records == [] and len(h.log) == log_length
    assert not h.core.state.replication.topics


# ====================================================================== CreateTopics
@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_partitions_adding_up_past_the_bound_refuse_every_topic(version: int, validate_only: bool) -> None:
    h = limited(10, 0, 1)
    request = (counted("a", 4), manual("b", [0], [1], [0]), counted("c", -1), counted("d", 3))  # 4 + 3 + 1 + 3
    assert_refused(h, *request, message=TOO_MANY_PARTITIONS, version=version, validate_only=validate_only)


@pytest.mark.parametrize(
    ("request_topics", "message"),
    [
        ((counted("a", 11),), TOO_MANY_PARTITIONS),
        ((counted("a", 10), counted("b", -1)), TOO_MANY_PARTITIONS),  # -1 counts the default (1)
        ((manual("a", *[[9]] * 11),), TOO_MANY_PARTITIONS),  # assignments count, even bad ones
        ((counted("a", 10),), TOO_MANY_RECORDS),  # 10 partitions, but 11 records with the TopicRecord
        ((counted("a", 5), counted("b", 4)), TOO_MANY_RECORDS),  # 9 partitions, 11 records
        ((counted("a", 10), counted("b", -7)), TOO_MANY_RECORDS),  # an invalid count counts nothing
    ],
    ids=["one-topic", "default-count", "assignments", "records-one-topic", "records-two-topics", "invalid-count"],
)
def test_kafka_counts_partitions_from_the_request_then_records(
    request_topics: tuple[CreateTopicsRequestCreatableTopic, ...], message: str
) -> None:
    assert_refused(limited(10, 0), *request_topics, message=message)


@pytest.mark.parametrize("validate_only", [False, True])
def test_records_past_the_bound_are_refused_in_validate_only_too(validate_only: bool) -> None:
    assert_refused(limited(10, 0), counted("a", 10), message=TOO_MANY_RECORDS, validate_only=validate_only)


def test_a_request_exactly_at_the_bound_is_created() -> None:
    h = limited(10, 0, 1)
    response, records = create(h, counted("a", 5), counted("b", 3), counted("bad", -7))  # 10 records
    assert [r.error_code for r in response.topics] == [0, 0, ErrorCode.INVALID_PARTITIONS]
    assert [type(r) for r in records] == [TopicRecord, *[PartitionRecord] * 5, TopicRecord, *[PartitionRecord] * 3]


def test_at_the_default_bound_ten_thousand_partitions_in_two_topics_are_created() -> None:
    h = cluster(0, 1, 2)
    response, records = create(h, counted("a", 9_000, 3), counted("b", 998, 3))
    assert [r.error_code for r in response.topics] == [0, 0]
    assert len(records) == 10_000
    refused, _ = create(h, counted("c", 10_001, 3))
    assert refused.topics[0].error_message == TOO_MANY_PARTITIONS


@pytest.mark.parametrize(
    "request_topics",
    [(counted("a", 16_777_217),), (counted("a", 2**31 - 1), counted("b", 2**31 - 1))],
    ids=["one-flipped-bit", "int32-overflow"],
)
def test_a_huge_count_is_refused_before_any_work_per_partition(
    monkeypatch: pytest.MonkeyPatch, request_topics: tuple[CreateTopicsRequestCreatableTopic, ...]
) -> None:
    h = cluster(0, 1, 2)

    def no_placement(*args: object) -> None:
        raise AssertionError("replicas placed for a refused request")

    monkeypatch.setattr(topics, "place_replicas", no_placement)
    tracemalloc.start()
    try:
        assert_refused(h, *request_topics, message=TOO_MANY_PARTITIONS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing allocated per requested partition


# ====================================================================== DeleteTopics
@pytest.mark.parametrize("version", [*DELETE_BY_NAME_VERSIONS, 6])
def test_deleting_more_topics_than_the_bound_refuses_every_topic(version: int) -> None:
    h = limited(2, 0)
    for name in "abc":
        h.create_topic(name, replication_factor=1)
    log_length = len(h.log)
    response, records = delete(h, version, "a", "b", "missing", "c")
    assert [(r.name, r.error_code, r.error_message) for r in response.responses] == [
        (name, ErrorCode.POLICY_VIOLATION, TOO_MANY_RECORDS) for name in ("a", "b", "missing", "c")
    ]
    assert records == [] and len(h.log) == log_length
    assert sorted(t.name for t in h.core.state.replication.topics.values()) == ["a", "b", "c"]


def test_v6_refused_entries_echo_the_ids_they_name() -> None:
    h = cluster(0)
    ids = (h.create_topic("a", replication_factor=1), h.create_topic("b", replication_factor=1))
    set_limit(h, 1)
    response, records = delete(h, 6, ids=ids)
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [
        (None, topic_id, ErrorCode.POLICY_VIOLATION) for topic_id in ids
    ]
    assert records == []


@pytest.mark.parametrize("version", [*DELETE_BY_NAME_VERSIONS, 6])
def test_deletion_counts_records_not_entries(version: int) -> None:
    """Unknown topics write nothing and a topic named twice is removed once: neither counts."""
    h = limited(2, 0)
    a, b = h.create_topic("a", replication_factor=1), h.create_topic("b", replication_factor=1)
    response, records = delete(h, version, "a", "missing", "b", "a")
    assert [r.error_code for r in response.responses] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, 0]
    assert records == [RemoveTopicRecord(topic_id=a), RemoveTopicRecord(topic_id=b)]
