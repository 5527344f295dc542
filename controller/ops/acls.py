"""The ACL APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31), as Kafka's controller answers
them (ControllerApis hands them to AclApis).

Rules (Kafka 3.9, AclApis `handleDescribeAcls` / `handleCreateAcls` / `handleDeleteAcls`):
- Without an authorizer, nothing is read or written (no records) and every request is answered
  SECURITY_DISABLED (54): CreateAcls each creation, in order, with "No Authorizer is configured."
  (CreateAclsRequest.getErrorResponse of a SecurityDisabledException); DeleteAcls each filter, in
  order, with the same message and no matching ACL (DeleteAclsRequest.getErrorResponse);
  DescribeAcls at the top level, with "No Authorizer is configured on the broker" (Kafka's text,
  on a controller too) and no resource. Throttle time 0.
- fencer has no authorizer yet (issue 22 brings one), and this is the one place that knows it:
  each operation below is Kafka's handler with `authorizer = None`, answering `without_authorizer`.
  An authorizer plugs in here: it (and the ACL state, `state.kept.acls`) becomes an argument of the
  operations, which then answer `without_authorizer` only when it is None, as AclApis matches on
  its `authorizer`.
- `error_response` is each request's `getErrorResponse` (one code and message for the whole
  request, in the shape above); a standby's NOT_CONTROLLER answer (ops.not_controller) uses it too.
- Not done as Kafka does: Kafka's request classes refuse, while parsing, a code 0 (UNKNOWN) in a
  creation or filter and a v0 pattern type other than LITERAL (ANY, for the filters: read as
  LITERAL), and Kafka closes the connection; fencer decodes such requests and answers them as
  any other (SECURITY_DISABLED).
"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_acls import CreateAclsRequest, CreateAclsResponse, CreateAclsResponseAclCreationResult
from protocol.messages.delete_acls import (
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteAclsResponseDeleteAclsFilterResult,
)
from protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from protocol.spec import Data

from ..state.controller_state import Result

AclRequest = DescribeAclsRequest | CreateAclsRequest | DeleteAclsRequest

#: Kafka's messages: CreateAcls and DeleteAcls raise SecurityDisabledException("No Authorizer is
#: configured."), whose message ApiError keeps (it differs from the error's default, "Security
#: features are disabled."); DescribeAcls sets its own.
NO_AUTHORIZER = "No Authorizer is configured."
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"


def describe_acls(request: DescribeAclsRequest, version: int) -> Result:
    """DescribeAcls (AclApis.handleDescribeAcls): the ACLs matching the request's filter."""
    return Result(without_authorizer(ApiKey.DESCRIBE_ACLS, request))


def create_acls(request: CreateAclsRequest, version: int) -> Result:
    """CreateAcls (AclApis.handleCreateAcls): one result per creation, in order."""
    return Result(without_authorizer(ApiKey.CREATE_ACLS, request))


def delete_acls(request: DeleteAclsRequest, version: int) -> Result:
    """DeleteAcls (AclApis.handleDeleteAcls): one result per filter, in order."""
    return Result(without_authorizer(ApiKey.DELETE_ACLS, request))


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
