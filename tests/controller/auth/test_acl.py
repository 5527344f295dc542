"""Kafka's ACL model (controller/auth/acl.py): codes, filters (Kafka's ResourcePatternFilterTest),
CreateAcls and DeleteAcls validation with Kafka's messages, records."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.auth.acl import (
    Acl,
    AclError,
    AclFilter,
    acl_from_record,
    acl_to_record,
    binding_refusal,
    filter_error,
    from_code,
    new_acl_error,
)
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.error_codes import ErrorCode
from protocol.records.metadata import AccessControlEntryRecord
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value

ANY, MATCH, LITERAL, PREFIXED = PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP


def test_codes_kafka_does_not_know_read_as_unknown() -> None:
    assert from_code(ResourceType, 7) is ResourceType.USER
    assert from_code(ResourceType, 99) is ResourceType.UNKNOWN
    assert from_code(PatternType, 5) is PatternType.UNKNOWN
    assert from_code(AclOperation, 15) is AclOperation.UNKNOWN
    assert from_code(AclPermissionType, -1) is AclPermissionType.UNKNOWN


def pattern(kind: ResourceType, name: str, pattern_type: PatternType) -> Acl:
    return Acl(kind, name, pattern_type, "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)


@pytest.mark.parametrize(
    ("acl_filter", "acl", "matches"),
    [
        (AclFilter(TOPIC, "Name", LITERAL), pattern(GROUP, "Name", LITERAL), False),
        (AclFilter(TOPIC, "Different", PREFIXED), pattern(TOPIC, "Name", PREFIXED), False),
        (AclFilter(TOPIC, "NAME", LITERAL), pattern(TOPIC, "Name", LITERAL), False),
        (AclFilter(TOPIC, "Name", LITERAL), pattern(TOPIC, "Name", PREFIXED), False),
        (AclFilter(ResourceType.ANY, "Name", PREFIXED), pattern(TOPIC, "Name", PREFIXED), True),
        (AclFilter(TOPIC, None, PREFIXED), pattern(TOPIC, "Name", PREFIXED), True),
        (AclFilter(TOPIC, None, ANY), pattern(TOPIC, "Name", PREFIXED), True),
        (AclFilter(TOPIC, None, MATCH), pattern(TOPIC, "Name", PREFIXED), True),
        (AclFilter(TOPIC, "Name", LITERAL), pattern(TOPIC, "Name", LITERAL), True),
        (AclFilter(TOPIC, "Name", ANY), pattern(TOPIC, "Name", LITERAL), True),
        (AclFilter(TOPIC, "Name", MATCH), pattern(TOPIC, "Name", LITERAL), True),
        (AclFilter(TOPIC, "Name-something", MATCH), pattern(TOPIC, "Name", LITERAL), False),
        (AclFilter(TOPIC, "*", LITERAL), pattern(TOPIC, "*", LITERAL), True),
        (AclFilter(TOPIC, "Name", LITERAL), pattern(TOPIC, "*", LITERAL), False),
        (AclFilter(TOPIC, "*", LITERAL), pattern(TOPIC, "Name", LITERAL), False),
        (AclFilter(TOPIC, "Name", ANY), pattern(TOPIC, "*", LITERAL), False),
        (AclFilter(TOPIC, "Name", MATCH), pattern(TOPIC, "*", LITERAL), True),
        (AclFilter(TOPIC, "Name", PREFIXED), pattern(TOPIC, "Name", PREFIXED), True),
        (AclFilter(TOPIC, "Name", PREFIXED), pattern(TOPIC, "Name-something", PREFIXED), False),
        (AclFilter(TOPIC, "Name-something", PREFIXED), pattern(TOPIC, "Name", PREFIXED), False),
        (AclFilter(TOPIC, "Name-something", ANY), pattern(TOPIC, "Name", PREFIXED), False),
        (AclFilter(TOPIC, "Name-something", MATCH), pattern(TOPIC, "Name", PREFIXED), True),
    ],
)
def test_resource_pattern_filters_as_kafka(acl_filter: AclFilter, acl: Acl, matches: bool) -> None:
    assert acl_filter.matches(acl) == matches


def test_entry_filters_match_each_field_unless_it_is_any() -> None:
    acl = Acl(TOPIC, "t", LITERAL, "User:bob", "10.0.0.1", AclOperation.READ, AclPermissionType.DENY)
    assert AclFilter().matches(acl)
    assert AclFilter(principal="User:bob", host="10.0.0.1", operation=AclOperation.READ).matches(acl)
    assert not AclFilter(principal="User:*").matches(acl)  # no wildcard semantics in a filter
    assert not AclFilter(host="*").matches(acl)
    assert not AclFilter(operation=AclOperation.ALL).matches(acl)
    assert not AclFilter(permission=AclPermissionType.ALLOW).matches(acl)


GOOD = Acl(TOPIC, "t", LITERAL, "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)


def invalid(message: str) -> AclError:
    return AclError(ErrorCode.INVALID_REQUEST, message)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({}, None),
        ({"resource_type": ResourceType.CLUSTER, "resource_name": "kafka-cluster"}, None),
        ({"pattern_type": PREFIXED, "principal": "User:*", "operation": AclOperation.ALL}, None),
        ({"principal": ":x"}, None),  # Kafka's parser takes an empty type
        (
            {"resource_type": ResourceType.CLUSTER},
            invalid("The only valid name for the CLUSTER resource is kafka-cluster"),
        ),
        (
            {"resource_type": ResourceType.CLUSTER, "resource_name": ""},
            invalid("The only valid name for the CLUSTER resource is kafka-cluster"),
        ),
        ({"resource_name": "", "resource_type": ResourceType.UNKNOWN}, invalid("Invalid empty resource name")),
        ({"resource_type": ResourceType.UNKNOWN, "pattern_type": MATCH}, invalid("Invalid resourceType UNKNOWN")),
        ({"resource_type": ResourceType.ANY}, invalid("Invalid resourceType ANY")),
        ({"pattern_type": MATCH, "operation": AclOperation.ANY}, invalid("Invalid patternType MATCH")),
        ({"pattern_type": ANY}, invalid("Invalid patternType ANY")),
        ({"pattern_type": PatternType.UNKNOWN}, invalid("Invalid patternType UNKNOWN")),
        (
            {"operation": AclOperation.UNKNOWN, "permission": AclPermissionType.ANY},
            invalid("Invalid operation UNKNOWN"),
        ),
        ({"operation": AclOperation.ANY}, invalid("Invalid operation ANY")),
        ({"permission": AclPermissionType.ANY, "principal": ""}, invalid("Invalid permissionType ANY")),
        ({"permission": AclPermissionType.UNKNOWN}, invalid("Invalid permissionType UNKNOWN")),
        ({"principal": "bob"}, invalid("expected a string in format principalType:principalName but got bob")),
        ({"principal": ""}, invalid("expected a string in format principalType:principalName but got ")),
    ],
)
def test_new_acls_are_checked_in_kafkas_order(changes: dict[str, object], error: AclError | None) -> None:
    acl = Acl(**{**{field: getattr(GOOD, field) for field in Acl.__slots__}, **changes})
    assert new_acl_error(acl) == error


def test_what_kafka_cannot_build_into_a_binding() -> None:
    assert binding_refusal(GOOD) is None
    assert (
        binding_refusal(Acl(ResourceType.ANY, "t", MATCH, "", "", AclOperation.ANY, AclPermissionType.ANY))
        == "resourceType must not be ANY"
    )
    assert (
        binding_refusal(Acl(TOPIC, "t", MATCH, "", "", AclOperation.ANY, AclPermissionType.ANY))
        == "patternType must not be MATCH"
    )
    assert (
        binding_refusal(Acl(TOPIC, "t", ANY, "", "", AclOperation.READ, AclPermissionType.ALLOW))
        == "patternType must not be ANY"
    )
    assert (
        binding_refusal(Acl(TOPIC, "t", LITERAL, "", "", AclOperation.ANY, AclPermissionType.ANY))
        == "operation must not be ANY"
    )
    assert (
        binding_refusal(Acl(TOPIC, "t", LITERAL, "", "", AclOperation.READ, AclPermissionType.ANY))
        == "permissionType must not be ANY"
    )
    # UNKNOWN builds (then validateNewAcl refuses it)
    assert (
        binding_refusal(
            Acl(ResourceType.UNKNOWN, "t", PatternType.UNKNOWN, "", "", AclOperation.UNKNOWN, AclPermissionType.UNKNOWN)
        )
        is None
    )


def test_delete_filters_with_unknown_fields_are_refused() -> None:
    assert filter_error(AclFilter()) is None
    assert filter_error(AclFilter(resource_type=ResourceType.UNKNOWN)) == invalid("Unknown patternFilter.")
    assert filter_error(AclFilter(pattern_type=PatternType.UNKNOWN, operation=AclOperation.UNKNOWN)) == invalid(
        "Unknown patternFilter."
    )
    assert filter_error(AclFilter(operation=AclOperation.UNKNOWN)) == invalid("Unknown entryFilter.")
    assert filter_error(AclFilter(permission=AclPermissionType.UNKNOWN)) == invalid("Unknown entryFilter.")


KNOWN_RECORDS = st.builds(
    AccessControlEntryRecord,
    id=st.uuids(),
    resource_type=st.sampled_from(list(ResourceType)),
    resource_name=st.text(max_size=10),
    pattern_type=st.sampled_from(list(PatternType)),
    principal=st.text(max_size=10),
    host=st.text(max_size=10),
    operation=st.sampled_from(list(AclOperation)),
    permission_type=st.sampled_from(list(AclPermissionType)),
)


@given(KNOWN_RECORDS)
def test_records_round_trip_through_acls_and_the_record_codec(record: AccessControlEntryRecord) -> None:
    acl_id, acl = acl_from_record(record)
    back = acl_to_record(acl_id, acl)
    assert back == record
    decoded, _ = decode_metadata_value(encode_metadata_value(back, 0))
    assert isinstance(decoded, AccessControlEntryRecord)
    assert acl_from_record(decoded) == (acl_id, acl)


def test_a_record_with_codes_kafka_does_not_know_reads_them_as_unknown() -> None:
    record = AccessControlEntryRecord(
        id=uuid.UUID(int=5),
        resource_type=42,
        resource_name="t",
        pattern_type=9,
        principal="User:a",
        host="*",
        operation=77,
        permission_type=-1,
    )
    _, acl = acl_from_record(record)
    assert (acl.resource_type, acl.pattern_type, acl.operation, acl.permission) == (
        ResourceType.UNKNOWN,
        PatternType.UNKNOWN,
        AclOperation.UNKNOWN,
        AclPermissionType.UNKNOWN,
    )
