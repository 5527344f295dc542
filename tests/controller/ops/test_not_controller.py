"""A controller that is not the active one answers every broker and admin API NOT_CONTROLLER (41),
shaped as Kafka's `getErrorResponse` shapes it, at every version the controller serves."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.ops.not_controller import not_controller
from controller.ops.served import INBOUND_API_KEYS, served_versions
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.registry import api, encode_response

from ...protocol.strategies import messages

# every node serves ApiVersions and the quorum's own RPCs (controller.server.quorum)
QUORUM = {ApiKey.FETCH, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH}
QUORUM |= {ApiKey.DESCRIBE_QUORUM, ApiKey.FETCH_SNAPSHOT}
ANSWERED = sorted(INBOUND_API_KEYS - {ApiKey.API_VERSIONS} - QUORUM)
CASES = [(key, version) for key in ANSWERED for version in served_versions(key)]


def errors(response: Any) -> list[int]:
    """Every error code of an answer: the top level's, then each topic's or partition's."""
    found = [response.error_code] if getattr(response, "error_code", 0) else []
    for topic in getattr(response, "topics", ()) or ():
        found.append(topic.error_code)
    for result in getattr(response, "responses", ()) or ():
        found.append(result.error_code)
    for election in getattr(response, "replica_election_results", ()) or ():
        found += [partition.error_code for partition in election.partition_result]
    for result in getattr(response, "results", ()) or ():  # CreateAcls' per creation
        found.append(result.error_code)
    for result in getattr(response, "filter_results", ()) or ():  # DeleteAcls' per filter
        found.append(result.error_code)
    return found


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{api(k).name}-v{v}" for k, v in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_broker_and_admin_api_is_answered_not_controller(key: int, version: int, data: st.DataObject) -> None:
    request = data.draw(messages(api(key).request, version))
    response = not_controller(key, version, request, leader_id=2)
    assert type(response) is api(key).response
    found = errors(response)
    assert set(found) <= {ErrorCode.NOT_CONTROLLER}
    # every topic asked about is answered; an API with a top-level code always carries it
    asked = 0  # the other APIs answer at the top level only, as Kafka's getErrorResponse does
    if key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS):
        asked = len(request.topics if key == ApiKey.CREATE_TOPICS or version >= 6 else request.topic_names)
    if key == ApiKey.ELECT_LEADERS:
        asked = sum(len(topic.partitions) for topic in request.topic_partitions or ())
    if key == ApiKey.CREATE_ACLS:
        asked = len(request.creations)
    if key == ApiKey.DELETE_ACLS:
        asked = len(request.filters)
    per_item_only = (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS)
    top_level = key not in per_item_only and (key, version) != (ApiKey.ELECT_LEADERS, 0)
    assert len(found) == asked + top_level
    encode_response(response, version, correlation_id=7)  # answerable at the request's version
    if key == ApiKey.CREATE_TOPICS:
        assert [topic.name for topic in response.topics] == [topic.name for topic in request.topics]
        assert all(t.error_message == "The active controller appears to be node 2" for t in response.topics)
    acl_answers = {
        ApiKey.DESCRIBE_ACLS: lambda: [response],
        ApiKey.CREATE_ACLS: lambda: list(response.results),
        ApiKey.DELETE_ACLS: lambda: list(response.filter_results),
    }
    if key in acl_answers:  # each with Kafka's message, as CreateTopics' topics
        assert all(a.error_message == "The active controller appears to be node 2" for a in acl_answers[key]())


def test_the_message_says_when_no_controller_is_known() -> None:
    response = not_controller(ApiKey.DESCRIBE_CLUSTER, 1, None, leader_id=None)
    assert response.error_message == "No controller appears to be active."  # type: ignore[attr-defined]


def test_api_versions_is_never_answered_so() -> None:
    with pytest.raises(ValueError, match="not answered NOT_CONTROLLER"):
        not_controller(ApiKey.API_VERSIONS, 3, None, leader_id=1)
