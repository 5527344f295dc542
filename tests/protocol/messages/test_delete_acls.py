"""DeleteAcls (api key 31): whole frames written byte by byte from Kafka 3.9's
DeleteAclsRequest.json / DeleteAclsResponse.json, never by fencer's encoder.

The request at v0 (no pattern type: LITERAL) and v2 (flexible, PatternTypeFilter since v1), the
response at v0 (Kafka's answer without an authorizer: SECURITY_DISABLED per filter), v1
(PatternType per matching ACL) and v3 (flexible, the USER resource type of KIP-373). Each frame
is decoded by fencer and by kio, and fencer encodes the decoded message back to the same bytes.
Then the version rules, that the daemon's listener serves the API, and a property test with
unknown tags, compiled against interpreted.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.delete_acls import (
    DeleteAclsRequest,
    DeleteAclsRequestDeleteAclsFilter,
    DeleteAclsResponse,
    DeleteAclsResponseDeleteAclsFilterResult,
    DeleteAclsResponseDeleteAclsMatchingAcl,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags


def acl_filter(**changes: object) -> DeleteAclsRequestDeleteAclsFilter:
    fields: dict[str, object] = {
        "resource_type_filter": ResourceType.TOPIC,
        "resource_name_filter": "t",
        "principal_filter": None,
        "host_filter": None,
        "operation": AclOperation.ANY,
        "permission_type": AclPermissionType.ANY,
    }
    fields.update(changes)
    return DeleteAclsRequestDeleteAclsFilter(**fields)  # type: ignore[arg-type]


def matching(**changes: object) -> DeleteAclsResponseDeleteAclsMatchingAcl:
    fields: dict[str, object] = {
        "error_message": None,
        "resource_type": ResourceType.TOPIC,
        "resource_name": "t",
        "principal": "User:a",
        "host": "*",
        "operation": AclOperation.READ,
        "permission_type": AclPermissionType.ALLOW,
    }
    fields.update(changes)
    return DeleteAclsResponseDeleteAclsMatchingAcl(**fields)  # type: ignore[arg-type]


def test_request_v0() -> None:
    message = DeleteAclsRequest(filters=(acl_filter(), acl_filter(resource_name_filter=None, host_filter="*")))
    body = bytes.fromhex(
        "00000002"  # Filters: int32 count 2
        "02 0001 74"  # - ResourceTypeFilter 2 (TOPIC), ResourceNameFilter "t" (no PatternTypeFilter before v1)
        "ffff ffff"  # - PrincipalFilter null, HostFilter null
        "01 01"  # - Operation 1 (ANY), PermissionType 1 (ANY)
        "02 ffff"  # - ResourceTypeFilter 2 (TOPIC), ResourceNameFilter null
        "ffff 0001 2a"  # - PrincipalFilter null, HostFilter "*"
        "01 01"  # - Operation, PermissionType: ANY
    )
    check_request(message, 0, body)


def test_request_v2_flexible() -> None:
    message = DeleteAclsRequest(filters=(acl_filter(pattern_type_filter=PatternType.MATCH, principal_filter="User:a"),))
    body = bytes.fromhex(
        "02"  # Filters: compact array 1
        "02 02 74"  # - ResourceTypeFilter 2 (TOPIC), ResourceNameFilter: compact "t"
        "02"  # - PatternTypeFilter 2 (MATCH, v1+)
        "07 557365723a61"  # - PrincipalFilter: compact "User:a"
        "00"  # - HostFilter: compact null
        "01 01"  # - Operation, PermissionType: ANY
        "00"  # - filter tag buffer
        "00"  # body tag buffer
    )
    check_request(message, 2, body)


def test_response_v0_security_disabled() -> None:
    message = DeleteAclsResponse(
        filter_results=(DeleteAclsResponseDeleteAclsFilterResult(error_code=54, error_message="m"),) * 2
    )
    body = bytes.fromhex(
        "00000000"  # ThrottleTimeMs 0
        "00000002"  # FilterResults: int32 count 2
        "0036 0001 6d 00000000"  # - ErrorCode 54 (SECURITY_DISABLED), ErrorMessage "m", MatchingAcls: 0
        "0036 0001 6d 00000000"  # - the same
    )
    check_response(message, 0, body)


def test_response_v1_pattern_type() -> None:
    message = DeleteAclsResponse(
        throttle_time_ms=2,
        filter_results=(
            DeleteAclsResponseDeleteAclsFilterResult(
                error_code=0, error_message=None, matching_acls=(matching(pattern_type=PatternType.PREFIXED),)
            ),
        ),
    )
    body = bytes.fromhex(
        "00000002"  # ThrottleTimeMs 2
        "00000001"  # FilterResults: int32 count 1
        "0000 ffff"  # - ErrorCode 0, ErrorMessage null
        "00000001"  # - MatchingAcls: int32 count 1
        "0000 ffff"  # -- ErrorCode 0, ErrorMessage null
        "02 0001 74"  # -- ResourceType 2 (TOPIC), ResourceName "t"
        "04"  # -- PatternType 4 (PREFIXED, v1+)
        "0006 557365723a61 0001 2a"  # -- Principal "User:a", Host "*"
        "03 03"  # -- Operation 3 (READ), PermissionType 3 (ALLOW)
    )
    check_response(message, 1, body)


def test_response_v3_flexible_user_resource() -> None:
    message = DeleteAclsResponse(
        filter_results=(
            DeleteAclsResponseDeleteAclsFilterResult(
                error_code=0,
                error_message=None,
                matching_acls=(
                    matching(
                        error_code=87,
                        error_message="m",
                        resource_type=ResourceType.USER,
                        resource_name="a",
                        operation=AclOperation.DESCRIBE_TOKENS,
                        permission_type=AclPermissionType.DENY,
                    ),
                ),
            ),
        ),
    )
    body = bytes.fromhex(
        "00000000"  # ThrottleTimeMs 0
        "02"  # FilterResults: compact array 1
        "0000 00"  # - ErrorCode 0, ErrorMessage: compact null
        "02"  # - MatchingAcls: compact array 1
        "0057 02 6d"  # -- ErrorCode 87, ErrorMessage: compact "m"
        "07 02 61"  # -- ResourceType 7 (USER, v3), ResourceName: compact "a"
        "03"  # -- PatternType 3 (LITERAL)
        "07 557365723a61 02 2a"  # -- Principal: compact "User:a", Host: compact "*"
        "0e 02"  # -- Operation 14 (DESCRIBE_TOKENS), PermissionType 2 (DENY)
        "00"  # -- matching acl tag buffer
        "00"  # - filter result tag buffer
        "00"  # body tag buffer
    )
    check_response(message, 3, body)


def test_version_rules() -> None:
    """v0 has no pattern type: it reads as LITERAL, and another one cannot be written (not ignorable)."""
    v0 = codec(DeleteAclsRequest, 0)
    request = DeleteAclsRequest(filters=(acl_filter(),))
    assert v0.decode_exact(v0.encode(request)).filters[0].pattern_type_filter == PatternType.LITERAL
    with pytest.raises(EncodeError):
        v0.encode(DeleteAclsRequest(filters=(acl_filter(pattern_type_filter=PatternType.ANY),)))
    prefixed = DeleteAclsResponseDeleteAclsFilterResult(matching_acls=(matching(pattern_type=PatternType.PREFIXED),))
    with pytest.raises(EncodeError):
        codec(DeleteAclsResponse, 0).encode(DeleteAclsResponse(filter_results=(prefixed,)))


@pytest.mark.parametrize("version", range(4))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) takes every version."""
    request = DeleteAclsRequest(filters=(acl_filter(),))
    payload = encode_request(request, version, correlation_id=42)[4:]
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == request


@pytest.mark.parametrize("version", range(4))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((DeleteAclsRequest, DeleteAclsResponse), version, data)
