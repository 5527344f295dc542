"""Kafka's ACL model: resource, operation, permission and pattern types, ACLs, filters, validation.

Rules (Kafka 3.9: clients' common/acl and common/resource, AclControlManager, AclApis):
- The four enums are protocol.acl_codes' (Kafka's numbers, as the wire and the metadata records
  carry them). `from_code` reads an unrecognised code as UNKNOWN, as Kafka's `fromCode` does.
- An `Acl` is an AclBinding: a resource pattern (type, name, LITERAL or PREFIXED) and an entry
  (principal "Type:name", host, operation, permission). The LITERAL name "*" is the wildcard
  resource; "User:*" the wildcard principal; host "*" any host.
- An `AclFilter` is an AclBindingFilter: None fields and ANY types match anything. Its pattern
  type selects as ResourcePatternFilter does: ANY or an exact type compares names exactly; MATCH
  also takes the LITERAL wildcard "*" and every PREFIXED ACL whose name is a prefix of the
  filter's name (MATCH with no name matches every pattern).
- A new ACL (CreateAcls) is refused with INVALID_REQUEST and Kafka's message, checked in
  Kafka's order: AclApis first (a CLUSTER resource named other than "kafka-cluster"; an empty
  name), then AclControlManager.validateNewAcl (UNKNOWN/ANY resource type, a pattern type other
  than LITERAL/PREFIXED, UNKNOWN/ANY operation, a permission other than ALLOW/DENY). fencer adds
  one rule last, not in Kafka: a principal that is empty or has no ':' is refused with the
  message of Kafka's SecurityUtils.parseKafkaPrincipal (Kafka 3.9 stores such an ACL, then
  fails every authorization that reaches it).
- On Kafka's wire, some refusals happen before validateNewAcl, for the whole request (the
  protocol ops decide; the rules are here so that they are in one place):
  a raw code 0 (UNKNOWN) in any of a creation's four codes, or a filter's, fails the request's
  parsing (Kafka closes the connection); an ANY resource type, operation or permission, or an
  ANY/MATCH pattern type, cannot be built into Kafka's AclBinding (`binding_refusal`) and every
  creation of the request answers UNKNOWN_SERVER_ERROR without a message.
- A DeleteAcls filter with an UNKNOWN pattern/resource type, or an UNKNOWN operation or
  permission, is INVALID_REQUEST "Unknown patternFilter." / "Unknown entryFilter." (validateFilter).
- Records: AccessControlEntryRecord <-> (id, Acl), codes as they are (an unknown one becomes
  UNKNOWN, as StandardAcl.fromRecord reads it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TypeVar

from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.error_codes import ErrorCode
from protocol.records.metadata import AccessControlEntryRecord

CLUSTER_NAME = "kafka-cluster"
WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"


Code = TypeVar("Code", ResourceType, PatternType, AclOperation, AclPermissionType)


def from_code(kind: type[Code], code: int) -> Code:
    """The `kind` member with Kafka's `code`; UNKNOWN for a code Kafka does not know (`fromCode`)."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)


@dataclass(frozen=True, slots=True)
class Acl:
    """One ACL (Kafka's AclBinding / StandardAcl)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None and ANY match anything (see the module's rules for MATCH)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: Acl) -> bool:
        return self.matches_pattern(acl) and self.matches_entry(acl)

    def matches_pattern(self, acl: Acl) -> bool:
        """ResourcePatternFilter.matches (an ACL of UNKNOWN pattern type, which Kafka would fail on, matches
        no MATCH filter)."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return self.resource_name == acl.resource_name or acl.resource_name == WILDCARD_RESOURCE
        if acl.pattern_type == PatternType.PREFIXED:
            return self.resource_name.startswith(acl.resource_name)
        return False

    def matches_entry(self, acl: Acl) -> bool:
        """AccessControlEntryFilter.matches."""
        return (
            (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and (self.operation == AclOperation.ANY or self.operation == acl.operation)
            and (self.permission == AclPermissionType.ANY or self.permission == acl.permission)
        )


@dataclass(frozen=True, slots=True)
class AclError:
    """A refusal as the wire carries it: the error code and Kafka's message (None: no message)."""

    code: ErrorCode
    message: str | None


def _invalid(message: str) -> AclError:
    return AclError(ErrorCode.INVALID_REQUEST, message)


def principal_refusal(principal: str | None) -> str | None:
    """Why `principal` is not "Type:name" (SecurityUtils.parseKafkaPrincipal's message), or None."""
    if not principal or ":" not in principal:
        return f"expected a string in format principalType:principalName but got {principal}"
    return None


def new_acl_error(acl: Acl) -> AclError | None:
    """Why CreateAcls refuses `acl` (AclApis, then validateNewAcl, then fencer's principal rule), or None."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return _invalid(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.resource_name:
        return _invalid("Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return _invalid(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return _invalid(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return _invalid(f"Invalid operation {acl.operation.name}")
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return _invalid(f"Invalid permissionType {acl.permission.name}")
    refusal = principal_refusal(acl.principal)
    return None if refusal is None else _invalid(refusal)


def binding_refusal(acl: Acl) -> str | None:
    """Why Kafka cannot build `acl` into an AclBinding (ResourcePattern's, then AccessControlEntry's
    IllegalArgumentException), or None. Kafka then answers the whole CreateAcls with UNKNOWN_SERVER_ERROR."""
    if acl.resource_type == ResourceType.ANY:
        return "resourceType must not be ANY"
    if acl.pattern_type in (PatternType.MATCH, PatternType.ANY):
        return f"patternType must not be {acl.pattern_type.name}"
    if acl.operation == AclOperation.ANY:
        return "operation must not be ANY"
    if acl.permission == AclPermissionType.ANY:
        return "permissionType must not be ANY"
    return None


def filter_error(acl_filter: AclFilter) -> AclError | None:
    """Why DeleteAcls refuses `acl_filter` (AclControlManager.validateFilter), or None."""
    if acl_filter.resource_type == ResourceType.UNKNOWN or acl_filter.pattern_type == PatternType.UNKNOWN:
        return _invalid("Unknown patternFilter.")
    if acl_filter.operation == AclOperation.UNKNOWN or acl_filter.permission == AclPermissionType.UNKNOWN:
        return _invalid("Unknown entryFilter.")
    return None


def acl_of_codes(
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> Acl:
    """An ACL from its wire or record fields, each code as Kafka's `fromCode` reads it."""
    return Acl(
        resource_type=from_code(ResourceType, resource_type),
        resource_name=resource_name,
        pattern_type=from_code(PatternType, pattern_type),
        principal=principal,
        host=host,
        operation=from_code(AclOperation, operation),
        permission=from_code(AclPermissionType, permission),
    )


def acl_from_record(record: AccessControlEntryRecord) -> tuple[uuid.UUID, Acl]:
    """The ACL a record creates, with its id (StandardAclWithId.fromRecord)."""
    return record.id, acl_of_codes(
        record.resource_type,
        record.resource_name,
        record.pattern_type,
        record.principal,
        record.host,
        record.operation,
        record.permission_type,
    )


def acl_to_record(acl_id: uuid.UUID, acl: Acl) -> AccessControlEntryRecord:
    """The record that creates `acl` under `acl_id` (StandardAclWithId.toRecord)."""
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=int(acl.resource_type),
        resource_name=acl.resource_name,
        pattern_type=int(acl.pattern_type),
        principal=acl.principal,
        host=acl.host,
        operation=int(acl.operation),
        permission_type=int(acl.permission),
    )
