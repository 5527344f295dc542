"""The ACL APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31), as Kafka's controller answers
them (ControllerApis hands them to AclApis).

Rules (Kafka 3.9, AclApis `handleDescribeAcls` / `handleCreateAcls` / `handleDeleteAcls`):
- Without an authorizer, nothing is read or written (no records) and every request is answered
  SECURITY_DISABLED (54): CreateAcls each creation, in order, with "No Authorizer is configured."
  (CreateAclsRequest.getErrorResponse of a SecurityDisabledException); DeleteAcls each filter, in
  order, with the same message and no matching ACL (DeleteAclsRequest.getErrorResponse);
  DescribeAcls at the top level, with "No Authorizer is configured on the broker" (Kafka's text,
  on a controller too) and no resource. Throttle time 0.
- Without an authorizer this is the one place that decides the answer: each operation below is
  Kafka's handler with `authorizer = None`, answering `without_authorizer`.
- With one (`ControllerConfig.authorizer`), the cluster check (ALTER for CreateAcls and DeleteAcls,
  DESCRIBE for DescribeAcls) was made by the core before (`ops.authorization`), and:
  - DescribeAcls answers the ACLs its filter matches (`auth.acl.AclFilter`), in Kafka's order
    (StandardAcl.compareTo), grouped by resource pattern in the order the groups first appear
    (Kafka groups them in a HashMap, in no order a client may rely on). A filter with an UNKNOWN
    code, which Kafka refuses while parsing, matches nothing.
  - CreateAcls: if any creation cannot be an AclBinding (`acl.binding_refusal`: an ANY type,
    operation or permission, an ANY/MATCH pattern type), every creation is UNKNOWN_SERVER_ERROR
    without a message (AclApis fails as a whole). Else each creation in order: refused with
    INVALID_REQUEST and Kafka's message (`acl.new_acl_error`, AclApis then validateNewAcl), or
    success, with one AccessControlEntryRecord for an ACL not yet present (AclControlManager: an
    ACL already there, or created earlier in the same request, is a success that writes nothing).
    An ACL id is a random UUID from the core's seeded source (as topic ids), never one in use.
    More new ACLs than `max_records_per_operation` refuse every creation (POLICY_VIOLATION, Kafka's
    "Unable to perform excessively large batch operation.", as its controller answers a
    BoundedList overflow), nothing written.
  - DeleteAcls: decided a filter per step (paced), its records one batch at the end; each
    filter in order: INVALID_REQUEST for an UNKNOWN code (`acl.filter_error`),
    else every ACL it matches, listed in Kafka's order (the error null, each matching ACL's too,
    as DeleteAclsResponse.filterResult) and removed by one RemoveAccessControlEntryRecord (an ACL
    several filters match is listed by each, removed once). A filter whose removals would take the
    request past `max_records_per_operation` is UNKNOWN_SERVER_ERROR without a message (Kafka's
    BoundedListTooLongException, caught per filter) and removes nothing (Kafka keeps the removals
    it added before the overflow).
- `error_response` is each request's `getErrorResponse` (one code and message for the whole
  request, in the shape above); a standby's NOT_CONTROLLER answer (ops.not_controller) uses it too.
- A code 0 (UNKNOWN) in a creation or a filter never reaches these handlers on the daemon: Kafka's
  request classes refuse it while parsing and the connection closes (`controller.server.request_checks`,
  as the listener applies it). Handed one anyway (the core called directly), they answer it as
  above: SECURITY_DISABLED without an authorizer; with one, in a creation its INVALID_REQUEST, in
  a DeleteAcls filter the filter's, in a DescribeAcls filter no match.
"""

from __future__ import annotations

import random
import uuid

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
    DeleteAclsResponseDeleteAclsMatchingAcl,
)
from protocol.messages.describe_acls import (
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseAclDescription,
    DescribeAclsResponseDescribeAclsResource,
)
from protocol.records.metadata import RemoveAccessControlEntryRecord
from protocol.spec import Data

from ..auth.acl import (
    Acl,
    AclFilter,
    acl_of_codes,
    acl_to_record,
    binding_refusal,
    filter_error,
    from_code,
    new_acl_error,
)
from ..auth.authorizer import AclSnapshot, Authorizer
from ..state.controller_state import ControllerConfig, Outcome, Result, Steps
from .changes import versioned
from .topics import TOO_MANY_RECORDS, new_topic_id

AclRequest = DescribeAclsRequest | CreateAclsRequest | DeleteAclsRequest

#: Kafka's messages: CreateAcls and DeleteAcls raise SecurityDisabledException("No Authorizer is
#: configured."), whose message ApiError keeps (it differs from the error's default, "Security
#: features are disabled."); DescribeAcls sets its own.
NO_AUTHORIZER = "No Authorizer is configured."
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"


def describe_acls(request: DescribeAclsRequest, version: int, authorizer: Authorizer | None = None) -> Result:
    """DescribeAcls (AclApis.handleDescribeAcls): the ACLs matching the request's filter."""
    if authorizer is None:
        return Result(without_authorizer(ApiKey.DESCRIBE_ACLS, request))
    groups: dict[tuple[int, str, int], list[DescribeAclsResponseAclDescription]] = {}
    for _, acl in authorizer.acls.acls(_filter_of(request)):
        key = (acl.resource_type, acl.resource_name, acl.pattern_type)
        groups.setdefault(key, []).append(
            DescribeAclsResponseAclDescription(
                principal=acl.principal, host=acl.host, operation=acl.operation, permission_type=acl.permission
            )
        )
    resources = tuple(
        DescribeAclsResponseDescribeAclsResource(
            resource_type=resource_type, resource_name=name, pattern_type=pattern_type, acls=tuple(descriptions)
        )
        for (resource_type, name, pattern_type), descriptions in groups.items()
    )
    return Result(DescribeAclsResponse(resources=resources))


def create_acls(
    request: CreateAclsRequest,
    version: int,
    authorizer: Authorizer | None = None,
    rng: random.Random | None = None,
    max_records: int = ControllerConfig.max_records_per_operation,
) -> Result:
    """CreateAcls (AclApis.handleCreateAcls, AclControlManager.createAcls): one result per creation, in order."""
    if authorizer is None:
        return Result(without_authorizer(ApiKey.CREATE_ACLS, request))
    wanted = [_acl_of(creation) for creation in request.creations]
    if any(binding_refusal(acl) is not None for acl in wanted):
        return Result(error_response(ApiKey.CREATE_ACLS, request, ErrorCode.UNKNOWN_SERVER_ERROR, None))
    snapshot, source = authorizer.acls, rng if rng is not None else random.Random()
    added: dict[Acl, uuid.UUID] = {}
    taken: set[uuid.UUID] = set()  # the ids of `added`
    results = []
    for acl in wanted:
        refusal = new_acl_error(acl)
        if refusal is not None:
            results.append(CreateAclsResponseAclCreationResult(error_code=refusal.code, error_message=refusal.message))
            continue
        if acl not in added and not _present(snapshot, acl):
            added[acl] = _new_acl_id(snapshot, taken, source)
        results.append(CreateAclsResponseAclCreationResult())
    if len(added) > max_records:
        return Result(error_response(ApiKey.CREATE_ACLS, request, ErrorCode.POLICY_VIOLATION, TOO_MANY_RECORDS))
    records = tuple(versioned(acl_to_record(acl_id, acl)) for acl, acl_id in added.items())
    return Result(CreateAclsResponse(results=tuple(results)), records)


def delete_acls(
    request: DeleteAclsRequest,
    version: int,
    authorizer: Authorizer | None = None,
    max_records: int = ControllerConfig.max_records_per_operation,
) -> Outcome:
    """DeleteAcls (AclApis.handleDeleteAcls, AclControlManager.deleteAcls): one result per filter,
    in order, decided a filter per step (a request of thousands of filters is matched in paced
    slices, never in one hold of the event loop) and written as one batch at the end."""
    if authorizer is None:
        return Result(without_authorizer(ApiKey.DELETE_ACLS, request))
    return _deleted(request, authorizer.acls, max_records)


def _deleted(request: DeleteAclsRequest, snapshot: AclSnapshot, max_records: int) -> Steps:
    removed: dict[uuid.UUID, None] = {}  # ordered: the records follow the filters
    results = []
    for wanted in request.filters:
        yield ()  # a step boundary: nothing staged, the caller may let other work run
        acl_filter = _filter_of(wanted)
        refusal = filter_error(acl_filter)
        if refusal is not None:
            results.append(
                DeleteAclsResponseDeleteAclsFilterResult(error_code=refusal.code, error_message=refusal.message)
            )
            continue
        matching = snapshot.acls(acl_filter)
        new = [acl_id for acl_id, _ in matching if acl_id not in removed]
        if len(removed) + len(new) > max_records:
            results.append(
                DeleteAclsResponseDeleteAclsFilterResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
            )
            continue
        removed.update(dict.fromkeys(new))
        results.append(
            DeleteAclsResponseDeleteAclsFilterResult(
                error_message=None, matching_acls=tuple(_matching(acl) for _, acl in matching)
            )
        )
    if removed:
        yield tuple(versioned(RemoveAccessControlEntryRecord(id=acl_id)) for acl_id in removed)
    return DeleteAclsResponse(filter_results=tuple(results))


def _acl_of(creation: CreateAclsRequestAclCreation) -> Acl:
    """A creation as an ACL, each code as Kafka's `fromCode` reads it."""
    return acl_of_codes(
        creation.resource_type,
        creation.resource_name,
        creation.resource_pattern_type,
        creation.principal,
        creation.host,
        creation.operation,
        creation.permission_type,
    )


def _filter_of(wanted: DescribeAclsRequest | DeleteAclsRequestDeleteAclsFilter) -> AclFilter:
    """A request's filter as Kafka's AclBindingFilter (DescribeAclsRequest.filter, DeleteAclsRequest's)."""
    return AclFilter(
        resource_type=from_code(ResourceType, wanted.resource_type_filter),
        resource_name=wanted.resource_name_filter,
        pattern_type=from_code(PatternType, wanted.pattern_type_filter),
        principal=wanted.principal_filter,
        host=wanted.host_filter,
        operation=from_code(AclOperation, wanted.operation),
        permission=from_code(AclPermissionType, wanted.permission_type),
    )


def _present(snapshot: AclSnapshot, acl: Acl) -> bool:
    """Is `acl` in `snapshot`? (Through the resource index: the ACLs matching its resource include it.)"""
    return any(existing == acl for existing in snapshot.matching(acl.resource_type, acl.resource_name))


def _new_acl_id(snapshot: AclSnapshot, taken: set[uuid.UUID], rng: random.Random) -> uuid.UUID:
    """A random id no ACL has, nor one `taken` in this request (AclControlManager.newAclId), from
    the core's seeded source."""
    while True:
        acl_id = new_topic_id(rng)
        if acl_id not in snapshot.by_id and acl_id not in taken:
            taken.add(acl_id)
            return acl_id


def _matching(acl: Acl) -> DeleteAclsResponseDeleteAclsMatchingAcl:
    """One ACL a DeleteAcls filter matched, as DeleteAclsResponse.matchingAcl lists it (no error)."""
    return DeleteAclsResponseDeleteAclsMatchingAcl(
        error_message=None,
        resource_type=acl.resource_type,
        resource_name=acl.resource_name,
        pattern_type=acl.pattern_type,
        principal=acl.principal,
        host=acl.host,
        operation=acl.operation,
        permission_type=acl.permission,
    )


def without_authorizer(api_key: int, request: AclRequest) -> Data:
    """Kafka's answer to an ACL request when no authorizer is configured: SECURITY_DISABLED."""
    text = NO_AUTHORIZER_DESCRIBE if api_key == ApiKey.DESCRIBE_ACLS else NO_AUTHORIZER
    return error_response(api_key, request, ErrorCode.SECURITY_DISABLED, text)


def error_response(api_key: int, request: AclRequest, code: int, text: str | None) -> Data:
    """The request's `getErrorResponse`: `code` and `text` for the whole request (DescribeAcls at
    the top level, CreateAcls for each creation, DeleteAcls for each filter)."""
    if api_key == ApiKey.DESCRIBE_ACLS:
        return DescribeAclsResponse(error_code=code, error_message=text)
    if api_key == ApiKey.CREATE_ACLS:
        assert isinstance(request, CreateAclsRequest)
        result = CreateAclsResponseAclCreationResult(error_code=code, error_message=text)
        return CreateAclsResponse(results=(result,) * len(request.creations))
    if api_key == ApiKey.DELETE_ACLS:
        assert isinstance(request, DeleteAclsRequest)
        filtered = DeleteAclsResponseDeleteAclsFilterResult(error_code=code, error_message=text)
        return DeleteAclsResponse(filter_results=(filtered,) * len(request.filters))
    raise ValueError(f"api key {api_key} is not an ACL API")
