"""An admin answer fits its request: every topic or partition named is answered once and nothing else."""

from __future__ import annotations

import uuid

from broker_sim.model.answers import misfit
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreateTopicsRequest,
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
from protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)

NOT_CONTROLLER = ErrorCode.NOT_CONTROLLER
ID = uuid.UUID(int=7)


def create(*names: str) -> CreateTopicsRequest:
    topics = tuple(
        CreateTopicsRequestCreatableTopic(name=name, num_partitions=1, replication_factor=1) for name in names
    )
    return CreateTopicsRequest(topics=topics)


def created(*names: str) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=tuple(CreateTopicsResponseCreatableTopicResult(name=name) for name in names))


def test_create_topics_answers_each_topic_once() -> None:
    assert misfit(create("a", "b"), 7, created("b", "a")) is None
    assert "missing ['b']" in (misfit(create("a", "b"), 7, created("a")) or "")
    assert "not asked or repeated ['a']" in (misfit(create("a"), 7, created("a", "a")) or "")
    assert misfit(create("a", "a"), 7, created("a")) is None  # duplicates in the request: not judged


def test_delete_topics_by_name_and_by_id() -> None:
    by_name = DeleteTopicsRequest(topic_names=("a",))
    assert misfit(by_name, 5, DeleteTopicsResponse(responses=())) is not None
    assert (
        misfit(by_name, 5, DeleteTopicsResponse(responses=(DeleteTopicsResponseDeletableTopicResult(name="a"),)))
        is None
    )
    v6 = DeleteTopicsRequest(
        topics=(DeleteTopicsRequestDeleteTopicState(name="a"), DeleteTopicsRequestDeleteTopicState(topic_id=ID))
    )
    answered = DeleteTopicsResponse(
        responses=(
            DeleteTopicsResponseDeletableTopicResult(name="a", error_code=NOT_CONTROLLER),
            DeleteTopicsResponseDeletableTopicResult(name=None, topic_id=ID, error_code=NOT_CONTROLLER),
        )
    )
    assert misfit(v6, 6, answered) is None
    assert misfit(v6, 6, DeleteTopicsResponse(responses=())) is not None  # NOT_CONTROLLER naming nothing


def test_elect_leaders_answers_each_partition_named() -> None:
    request = ElectLeadersRequest(topic_partitions=(ElectLeadersRequestTopicPartitions(topic="a", partitions=(0, 1)),))
    results = (
        ElectLeadersResponseReplicaElectionResult(
            topic="a", partition_result=(ElectLeadersResponsePartitionResult(partition_id=0),)
        ),
    )
    assert "missing [\"('a', 1)\"]" in (
        misfit(request, 2, ElectLeadersResponse(replica_election_results=results)) or ""
    )
    every = ElectLeadersRequest(topic_partitions=None)
    assert misfit(every, 2, ElectLeadersResponse(replica_election_results=results)) is None
