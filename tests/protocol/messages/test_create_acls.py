"""CreateAcls (api key 30): whole frames written byte by byte from Kafka 3.9's
CreateAclsRequest.json / CreateAclsResponse.json, never by fencer's encoder.

The request at v0 (no pattern type: LITERAL), v1 (ResourcePatternType, KIP-290) and v3 (flexible
since v2; the USER resource type of KIP-373), the response at v0 and v2 (flexible, a null
message). Each frame is decoded by fencer and by kio, and fencer encodes the decoded message back
to the same bytes. Then the version rules, that the daemon's listener serves the API, and a
property test with unknown tags, compiled against interpreted.
"""

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import INBOUND_API_KEYS
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.create_acls import (
    CreateAclsRequest,
    CreateAclsRequestAclCreation,
    CreateAclsResponse,
    CreateAclsResponseAclCreationResult,
)
from protocol.registry import decode_request, encode_request

from .frames import check_request, check_response, check_round_trip_with_unknown_tags


def creation(**changes: object) -> CreateAclsRequestAclCreation:
    fields: dict[str, object] = {
        "resource_type": ResourceType.TOPIC,
        "resource_name": "t",
        "principal": "User:a",
        "host": "*",
        "operation": AclOperation.READ,
        "permission_type": AclPermissionType.ALLOW,
    }
    fields.update(changes)
    return CreateAclsRequestAclCreation(**fields)  # type: ignore[arg-type]


def test_kafka_codes() -> None:
    """The codes as Kafka numbers them (ResourceType, PatternType, AclOperation, AclPermissionType)."""
    assert [(m.name, m.value) for m in ResourceType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("TOPIC", 2),
        ("GROUP", 3),
        ("CLUSTER", 4),
        ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6),
        ("USER", 7),
    ]
    assert [(m.name, m.value) for m in PatternType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("MATCH", 2),
        ("LITERAL", 3),
        ("PREFIXED", 4),
    ]
    assert [m.name for m in AclOperation] == [
        "UNKNOWN",
        "ANY",
        "ALL",
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "CREATE_TOKENS",
        "DESCRIBE_TOKENS",
    ]
    assert [m.value for m in AclOperation] == list(range(15))
    assert [(m.name, m.value) for m in AclPermissionType] == [("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3)]


def test_request_v0() -> None:
    message = CreateAclsRequest(creations=(creation(),))
    body = bytes.fromhex(
        "00000001"  # Creations: int32 count 1
        "02"  # - ResourceType 2 (TOPIC)
        "0001 74"  # - ResourceName "t" (no ResourcePatternType before v1)
        "0006 557365723a61"  # - Principal "User:a"
        "0001 2a"  # - Host "*"
        "03 03"  # - Operation 3 (READ), PermissionType 3 (ALLOW)
    )
    check_request(message, 0, body)


def test_request_v1_pattern_type() -> None:
    message = CreateAclsRequest(
        creations=(
            creation(resource_pattern_type=PatternType.PREFIXED, operation=AclOperation.WRITE),
            creation(
                resource_type=ResourceType.CLUSTER,
                resource_name="kafka-cluster",
                operation=AclOperation.ALTER,
                permission_type=AclPermissionType.DENY,
            ),
        )
    )
    body = bytes.fromhex(
        "00000002"  # Creations: int32 count 2
        "02 0001 74"  # - ResourceType 2 (TOPIC), ResourceName "t"
        "04"  # - ResourcePatternType 4 (PREFIXED, v1+)
        "0006 557365723a61 0001 2a"  # - Principal "User:a", Host "*"
        "04 03"  # - Operation 4 (WRITE), PermissionType 3 (ALLOW)
        "04 000d 6b61666b612d636c7573746572"  # - ResourceType 4 (CLUSTER), ResourceName "kafka-cluster"
        "03"  # - ResourcePatternType 3 (LITERAL)
        "0006 557365723a61 0001 2a"  # - Principal, Host
        "07 02"  # - Operation 7 (ALTER), PermissionType 2 (DENY)
    )
    check_request(message, 1, body)


def test_request_v3_flexible_user_resource() -> None:
    message = CreateAclsRequest(
        creations=(
            creation(
                resource_type=ResourceType.USER,
                resource_name="a",
                operation=AclOperation.CREATE_TOKENS,
            ),
        )
    )
    body = bytes.fromhex(
        "02"  # Creations: compact array 1
        "07"  # - ResourceType 7 (USER, v3)
        "02 61"  # - ResourceName: compact "a"
        "03"  # - ResourcePatternType 3 (LITERAL)
        "07 557365723a61"  # - Principal: compact "User:a"
        "02 2a"  # - Host: compact "*"
        "0d 03"  # - Operation 13 (CREATE_TOKENS), PermissionType 3 (ALLOW)
        "00"  # - creation tag buffer
        "00"  # body tag buffer
    )
    check_request(message, 3, body)


def test_response_v0() -> None:
    message = CreateAclsResponse(
        throttle_time_ms=5,
        results=(
            CreateAclsResponseAclCreationResult(error_code=54, error_message="m"),
            CreateAclsResponseAclCreationResult(error_code=0, error_message=None),
        ),
    )
    body = bytes.fromhex(
        "00000005"  # ThrottleTimeMs 5
        "00000002"  # Results: int32 count 2
        "0036 0001 6d"  # - ErrorCode 54 (SECURITY_DISABLED), ErrorMessage "m"
        "0000 ffff"  # - ErrorCode 0, ErrorMessage null
    )
    check_response(message, 0, body)


def test_response_v2_flexible() -> None:
    message = CreateAclsResponse(
        results=(CreateAclsResponseAclCreationResult(error_code=0, error_message=None),),
    )
    body = bytes.fromhex(
        "00000000"  # ThrottleTimeMs 0
        "02"  # Results: compact array 1
        "0000 00"  # - ErrorCode 0, ErrorMessage: compact null
        "00"  # - result tag buffer
        "00"  # body tag buffer
    )
    check_response(message, 2, body)


def test_version_rules() -> None:
    """v0 has no pattern type: it reads as LITERAL, and another one cannot be written (not ignorable)."""
    v0 = codec(CreateAclsRequest, 0)
    decoded = v0.decode_exact(v0.encode(CreateAclsRequest(creations=(creation(),))))
    assert decoded.creations[0].resource_pattern_type == PatternType.LITERAL
    with pytest.raises(EncodeError):
        v0.encode(CreateAclsRequest(creations=(creation(resource_pattern_type=PatternType.PREFIXED),)))
    prefixed = CreateAclsRequest(creations=(creation(resource_pattern_type=PatternType.PREFIXED),))
    v1 = codec(CreateAclsRequest, 1)
    assert v1.decode_exact(v1.encode(prefixed)) == prefixed
    assert dataclasses.replace(prefixed.creations[0], resource_pattern_type=3) == creation()


@pytest.mark.parametrize("version", range(4))
def test_decoded_and_served(version: int) -> None:
    """The daemon's listener (allowed=INBOUND_API_KEYS) takes every version."""
    request = CreateAclsRequest(creations=(creation(),))
    payload = encode_request(request, version, correlation_id=42)[4:]
    assert decode_request(payload, allowed=INBOUND_API_KEYS).body == request


@pytest.mark.parametrize("version", range(4))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    check_round_trip_with_unknown_tags((CreateAclsRequest, CreateAclsResponse), version, data)
