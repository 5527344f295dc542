"""DescribeAcls, CreateAcls and DeleteAcls without an authorizer: Kafka's controller
(AclApis) answers SECURITY_DISABLED (54) with its messages, writes nothing and reads nothing,
at every version, even with ACLs in the log."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.ops import acls
from controller.ops.served import served_versions
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_acls import (
    CreateAclsRequest,
    CreateAclsRequestAclCreation,
    CreateAclsResponse,
    CreateAclsResponseAclCreationResult,
)
from protocol.messages.delete_acls import (
    DeleteAclsRequest,
    DeleteAclsRequestDeleteAclsFilter,
    DeleteAclsResponse,
    DeleteAclsResponseDeleteAclsFilterResult,
)
from protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.messages.elect_leaders import ElectLeadersRequest
from protocol.records.metadata import AccessControlEntryRecord
from protocol.registry import api, encode_response

from ...protocol.strategies import messages
from ..harness import Harness

VERSIONS = range(4)
STORED = AccessControlEntryRecord(
    id=uuid.UUID(int=7),
    resource_type=ResourceType.TOPIC,
    resource_name="t",
    pattern_type=PatternType.LITERAL,
    principal="User:a",
    host="*",
    operation=AclOperation.READ,
    permission_type=AclPermissionType.ALLOW,
)


def with_an_acl() -> Harness:
    """A controller whose log holds an ACL (a Kafka cluster's, adopted): without an authorizer,
    Kafka's AclApis neither shows nor deletes it."""
    h = Harness()
    h.commit([(STORED, 0)])
    return h


def creation(name: str) -> CreateAclsRequestAclCreation:
    return CreateAclsRequestAclCreation(
        resource_type=ResourceType.TOPIC,
        resource_name=name,
        principal="User:a",
        host="*",
        operation=AclOperation.WRITE,
        permission_type=AclPermissionType.ALLOW,
    )


def test_messages_are_kafkas() -> None:
    assert acls.NO_AUTHORIZER == "No Authorizer is configured."
    assert acls.NO_AUTHORIZER_DESCRIBE == "No Authorizer is configured on the broker"


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_acls_is_security_disabled_at_the_top_level(version: int) -> None:
    h = with_an_acl()
    before = h.core.durable_view()
    request = DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY if version >= 1 else PatternType.LITERAL,
        principal_filter=None,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    response, records = h.send(request, version)
    assert response == DescribeAclsResponse(
        error_code=ErrorCode.SECURITY_DISABLED, error_message="No Authorizer is configured on the broker"
    )
    assert records == [] and h.core.durable_view() == before
    encode_response(response, version, correlation_id=1)


@pytest.mark.parametrize("version", VERSIONS)
def test_create_acls_answers_every_creation_in_order(version: int) -> None:
    h = with_an_acl()
    before = h.core.durable_view()
    response, records = h.send(CreateAclsRequest(creations=(creation("a"), creation("b"), creation("a"))), version)
    disabled = CreateAclsResponseAclCreationResult(
        error_code=ErrorCode.SECURITY_DISABLED, error_message="No Authorizer is configured."
    )
    assert response == CreateAclsResponse(results=(disabled, disabled, disabled))
    assert records == [] and h.core.durable_view() == before
    encode_response(response, version, correlation_id=1)


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_acls_answers_every_filter_and_deletes_nothing(version: int) -> None:
    h = with_an_acl()
    before = h.core.durable_view()
    matches_the_stored_acl = DeleteAclsRequestDeleteAclsFilter(
        resource_type_filter=ResourceType.TOPIC,
        resource_name_filter="t",
        principal_filter=None,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    response, records = h.send(DeleteAclsRequest(filters=(matches_the_stored_acl,) * 2), version)
    disabled = DeleteAclsResponseDeleteAclsFilterResult(
        error_code=ErrorCode.SECURITY_DISABLED, error_message="No Authorizer is configured."
    )
    assert response == DeleteAclsResponse(filter_results=(disabled, disabled))
    assert records == [] and h.core.durable_view() == before
    assert h.core.state.kept.acls == {STORED.id: STORED}
    encode_response(response, version, correlation_id=1)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_requests_get_empty_answers(version: int) -> None:
    h = Harness()
    assert h.send(CreateAclsRequest(creations=()), version) == (CreateAclsResponse(results=()), [])
    assert h.send(DeleteAclsRequest(filters=()), version) == (DeleteAclsResponse(filter_results=()), [])


KEYS = [ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS]
CASES = [(key, version) for key in KEYS for version in served_versions(key)]


@pytest.mark.parametrize(("key", "version"), CASES, ids=[f"{api(k).name}-v{v}" for k, v in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_any_request_is_answered_security_disabled_and_writes_nothing(
    key: int, version: int, data: st.DataObject
) -> None:
    """Whatever the codes and names (UNKNOWN, ANY, codes Kafka does not know): one answer per
    creation or filter, or the top level's, each SECURITY_DISABLED with Kafka's message."""
    h = Harness()
    request = data.draw(messages(api(key).request, version))
    response, records = h.send(request, version)
    assert type(response) is api(key).response and records == []
    if key == ApiKey.DESCRIBE_ACLS:
        answers = [(response.error_code, response.error_message)]
        assert response.resources == ()
    elif key == ApiKey.CREATE_ACLS:
        answers = [(result.error_code, result.error_message) for result in response.results]
        assert len(answers) == len(request.creations)
    else:
        answers = [(result.error_code, result.error_message) for result in response.filter_results]
        assert len(answers) == len(request.filters)
        assert all(result.matching_acls == () for result in response.filter_results)
    expected = acls.NO_AUTHORIZER_DESCRIBE if key == ApiKey.DESCRIBE_ACLS else acls.NO_AUTHORIZER
    assert set(answers) <= {(ErrorCode.SECURITY_DISABLED, expected)}
    assert response.throttle_time_ms == 0
    encode_response(response, version, correlation_id=1)


def test_error_response_knows_only_the_acl_apis() -> None:
    with pytest.raises(ValueError, match="not an ACL API"):
        acls.error_response(ApiKey.ELECT_LEADERS, ElectLeadersRequest(topic_partitions=None), 41, "x")  # type: ignore[arg-type]
