"""Kafka's parse-time refusals (`controller.server.request_checks`): a code 0 (UNKNOWN) in any of the four
coded fields of a CreateAcls creation, a DeleteAcls filter or a DescribeAcls filter; nothing else
(a code Kafka does not know, a v0 request, whose pattern type decodes as LITERAL)."""

from __future__ import annotations

import dataclasses

import pytest

from controller.server.request_checks import InvalidRequestError, decode_served, refusal
from protocol.api_keys import ApiKey
from protocol.messages.create_acls import CreateAclsRequest, CreateAclsRequestAclCreation
from protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsRequestDeleteAclsFilter
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.registry import encode_request

CREATION = CreateAclsRequestAclCreation(
    resource_type=2, resource_name="t", principal="User:a", host="*", operation=3, permission_type=3
)
FILTER = {
    "resource_type_filter": 2,
    "resource_name_filter": None,
    "principal_filter": None,
    "host_filter": None,
    "operation": 3,
    "permission_type": 3,
}


@pytest.mark.parametrize("field", ["resource_type", "resource_pattern_type", "operation", "permission_type"])
def test_a_creation_with_any_code_0_is_refused_and_one_unheard_of_is_not(field: str) -> None:
    for code, refused in ((0, True), (99, False), (-1, False)):
        body = CreateAclsRequest(creations=(CREATION, dataclasses.replace(CREATION, **{field: code})))
        assert (refusal(ApiKey.CREATE_ACLS, body) is not None) is refused


@pytest.mark.parametrize("field", ["resource_type_filter", "pattern_type_filter", "operation", "permission_type"])
def test_a_filter_with_any_code_0_is_refused(field: str) -> None:
    delete = DeleteAclsRequest(filters=(DeleteAclsRequestDeleteAclsFilter(**{**FILTER, field: 0}),))
    describe = DescribeAclsRequest(**{**FILTER, field: 0})
    assert refusal(ApiKey.DELETE_ACLS, delete) == "Filters contain UNKNOWN elements"
    assert refusal(ApiKey.DESCRIBE_ACLS, describe) == "DescribeAclsRequest contains UNKNOWN elements"
    assert refusal(ApiKey.DESCRIBE_ACLS, DescribeAclsRequest(**FILTER)) is None


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_decode_served_refuses_on_the_wire_at_every_version_and_v0_reads_literal(version: int) -> None:
    good = encode_request(CreateAclsRequest(creations=(CREATION,)), version, 5)[4:]
    assert decode_served(good).body.creations[0].resource_pattern_type == 3  # LITERAL, also at v0
    bad = CreateAclsRequest(creations=(dataclasses.replace(CREATION, operation=0),))
    with pytest.raises(InvalidRequestError, match="unknown elements") as raised:
        decode_served(encode_request(bad, version, 5)[4:])
    assert raised.value.reason == "invalid_request"
