"""DescribeAcls (api key 29): whole frames written byte by byte from Kafka 3.9's
DescribeAclsRequest.json / DescribeAclsResponse.json, never by fencer's encoder.

The request at v0 (no pattern type: LITERAL), v1 (PatternTypeFilter, KIP-290, and null filters)
and v3 (flexible since v2), the response at v0 (Kafka's answer without an authorizer: the top-level
SECURITY_DISABLED), v1 (PatternType per resource) and v2 (flexible). Each frame is decoded by
fencer and by kio, and fencer encodes the decoded message back to the same bytes. Then the
version rules, that the daemon's listener serves the API, and a property test with unknown tags,
compiled against interpreted.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.describe_acls import (
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseAclDescription,
    DescribeAclsResponseDescribeAclsResource,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags


def any_acl(**changes: object) -> DescribeAclsRequest:
    """Kafka's AclBindingFilter.ANY (what `kafka-acls --list` sends): every field matches anything."""
    fields: dict[str, object] = {
        "resource_type_filter": ResourceType.ANY,
        "resource_name_filter": None,
        "pattern_type_filter": PatternType.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": AclOperation.ANY,
        "permission_type": AclPermissionType.ANY,
    }
    fields.update(changes)
    return DescribeAclsRequest(**fields)  # type: ignore[arg-type]


def resource(pattern_type: int = PatternType.LITERAL) -> DescribeAclsResponseDescribeAclsResource:
    return DescribeAclsResponseDescribeAclsResource(
        resource_type=ResourceType.TOPIC,
        resource_name="t",
        pattern_type=pattern_type,
        acls=(
            DescribeAclsResponseAclDescription(
                principal="User:a", host="*", operation=AclOperation.READ, permission_type=AclPermissionType.ALLOW
            ),
        ),
    )


def test_request_v0() -> None:
    message = any_acl(pattern_type_filter=PatternType.LITERAL, resource_name_filter="t")
    body = bytes.fromhex(
        "01"  # ResourceTypeFilter 1 (ANY)
        "0001 74"  # ResourceNameFilter "t" (no PatternTypeFilter before v1)
        "ffff"  # PrincipalFilter null
        "ffff"  # HostFilter null
        "01 01"  # Operation 1 (ANY), PermissionType 1 (ANY)
    )
    check_request(message, 0, body)


def test_request_v1_pattern_type_filter() -> None:
    message = any_acl(principal_filter="User:a")
    body = bytes.fromhex(
        "01"  # ResourceTypeFilter 1 (ANY)
        "ffff"  # ResourceNameFilter null
        "01"  # PatternTypeFilter 1 (ANY, v1+)
        "0006 557365723a61"  # PrincipalFilter "User:a"
        "ffff"  # HostFilter null
        "01 01"  # Operation, PermissionType: ANY
    )
    check_request(message, 1, body)


def test_request_v3_flexible() -> None:
    message = any_acl(
        resource_type_filter=ResourceType.TOPIC,
        resource_name_filter="t",
        pattern_type_filter=PatternType.MATCH,
        host_filter="*",
        operation=AclOperation.DESCRIBE,
        permission_type=AclPermissionType.ALLOW,
    )
    body = bytes.fromhex(
        "02"  # ResourceTypeFilter 2 (TOPIC)
        "02 74"  # ResourceNameFilter: compact "t"
        "02"  # PatternTypeFilter 2 (MATCH)
        "00"  # PrincipalFilter: compact null
        "02 2a"  # HostFilter: compact "*"
        "08 03"  # Operation 8 (DESCRIBE), PermissionType 3 (ALLOW)
        "00"  # body tag buffer
    )
    check_request(message, 3, body)


def test_response_v0_security_disabled() -> None:
    message = DescribeAclsResponse(error_code=54, error_message="m")
    body = bytes.fromhex(
        "00000000"  # ThrottleTimeMs 0
        "0036"  # ErrorCode 54 (SECURITY_DISABLED)
        "0001 6d"  # ErrorMessage "m"
        "00000000"  # Resources: int32 count 0
    )
    check_response(message, 0, body)


def test_response_v1_pattern_type() -> None:
    message = DescribeAclsResponse(error_message=None, resources=(resource(PatternType.PREFIXED),))
    body = bytes.fromhex(
        "00000000 0000"  # ThrottleTimeMs 0, ErrorCode 0
        "ffff"  # ErrorMessage null
        "00000001"  # Resources: int32 count 1
        "02 0001 74"  # - ResourceType 2 (TOPIC), ResourceName "t"
        "04"  # - PatternType 4 (PREFIXED, v1+)
        "00000001"  # - Acls: int32 count 1
        "0006 557365723a61 0001 2a"  # -- Principal "User:a", Host "*"
        "03 03"  # -- Operation 3 (READ), PermissionType 3 (ALLOW)
    )
    check_response(message, 1, body)


def test_response_v2_flexible() -> None:
    message = DescribeAclsResponse(throttle_time_ms=1, error_message=None, resources=(resource(),))
    body = bytes.fromhex(
        "00000001 0000"  # ThrottleTimeMs 1, ErrorCode 0
        "00"  # ErrorMessage: compact null
        "02"  # Resources: compact array 1
        "02 02 74"  # - ResourceType 2 (TOPIC), ResourceName: compact "t"
        "03"  # - PatternType 3 (LITERAL)
        "02"  # - Acls: compact array 1
        "07 557365723a61 02 2a"  # -- Principal: compact "User:a", Host: compact "*"
        "03 03"  # -- Operation 3 (READ), PermissionType 3 (ALLOW)
        "00"  # -- acl tag buffer
        "00"  # - resource tag buffer
        "00"  # body tag buffer
    )
    check_response(message, 2, body)


def test_version_rules() -> None:
    """v0 has no pattern type: it reads as LITERAL, and another one cannot be written (not ignorable)."""
    v0 = codec(DescribeAclsRequest, 0)
    literal = any_acl(pattern_type_filter=PatternType.LITERAL)
    assert v0.decode_exact(v0.encode(literal)) == literal
    with pytest.raises(EncodeError):
        v0.encode(any_acl())  # ANY: Kafka's client sends it to a v0 broker as LITERAL, not fencer's codec
    with pytest.raises(EncodeError):
        codec(DescribeAclsResponse, 0).encode(DescribeAclsResponse(resources=(resource(PatternType.PREFIXED),)))
    assert codec(DescribeAclsRequest, 1).decode_exact(codec(DescribeAclsRequest, 1).encode(any_acl())) == any_acl()


@pytest.mark.parametrize("version", range(4))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) takes every version."""
    request = any_acl(pattern_type_filter=PatternType.LITERAL)
    payload = encode_request(request, version, correlation_id=42)[4:]
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == request


@pytest.mark.parametrize("version", range(4))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((DescribeAclsRequest, DescribeAclsResponse), version, data)
