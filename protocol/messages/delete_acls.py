"""DeleteAcls (api key 31), versions 0-3, flexible from 2.

An admin client (`kafka-acls --remove`, Admin.deleteAcls) asks for the ACL bindings matching
each of its filters to be deleted. A filter reads as DescribeAcls' (protocol.messages.
describe_acls): null names, principals and hosts and ANY (1) codes match anything. The response
answers every filter, in order, with an error code and message and the ACLs it matched, each
with its own deletion error. A KRaft controller serves it (its listeners include "controller");
it deletes each ACL with a RemoveAccessControlEntryRecord.

v1 adds the pattern type (KIP-290: PatternTypeFilter per filter, PatternType per matching ACL;
v0 means LITERAL, their default, and cannot carry another); v2 is the first flexible version;
v3 adds the USER resource type (KIP-373: a code, no field). The codes are `protocol.acl_codes`'
(Kafka's numbers).
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.acl_codes import PatternType
from protocol.api_keys import ApiKey
from protocol.spec import ARRAY, INT8, INT16, INT32, REQUEST, RESPONSE, STRING, Api, Data, F

API_KEY = ApiKey.DELETE_ACLS


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsRequestDeleteAclsFilter(Data):
    resource_type_filter: Annotated[int, F(INT8)]
    # None: any resource name (and below: any principal, any host)
    resource_name_filter: Annotated[str | None, F(STRING, nullable="0+")]
    pattern_type_filter: Annotated[int, F(INT8, "1+")] = PatternType.LITERAL.value
    principal_filter: Annotated[str | None, F(STRING, nullable="0+")]
    host_filter: Annotated[str | None, F(STRING, nullable="0+")]
    operation: Annotated[int, F(INT8)]
    permission_type: Annotated[int, F(INT8)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-3", flexible="2+")
    filters: Annotated[tuple[DeleteAclsRequestDeleteAclsFilter, ...], F(ARRAY(DeleteAclsRequestDeleteAclsFilter))]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResponseDeleteAclsMatchingAcl(Data):
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, nullable="0+")] = ""
    resource_type: Annotated[int, F(INT8)]
    resource_name: Annotated[str, F(STRING)]
    pattern_type: Annotated[int, F(INT8, "1+")] = PatternType.LITERAL.value
    principal: Annotated[str, F(STRING)]
    host: Annotated[str, F(STRING)]
    operation: Annotated[int, F(INT8)]
    permission_type: Annotated[int, F(INT8)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResponseDeleteAclsFilterResult(Data):
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, nullable="0+")] = ""
    matching_acls: Annotated[
        tuple[DeleteAclsResponseDeleteAclsMatchingAcl, ...], F(ARRAY(DeleteAclsResponseDeleteAclsMatchingAcl))
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-3", flexible="2+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    filter_results: Annotated[
        tuple[DeleteAclsResponseDeleteAclsFilterResult, ...], F(ARRAY(DeleteAclsResponseDeleteAclsFilterResult))
    ] = ()
