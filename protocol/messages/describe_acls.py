"""DescribeAcls (api key 29), versions 0-3, flexible from 2.

An admin client (`kafka-acls --list`, Admin.describeAcls) asks for the ACL bindings matching
one filter: a resource type, name (null: any), pattern type, principal (null: any), host (null:
any), operation and permission; ANY (1) matches every code, and pattern type MATCH (2) also
takes the wildcard and prefixed patterns that cover the name. The response has a top-level
error code and message, and the matching ACLs grouped by resource pattern. A KRaft controller
serves it (its listeners include "controller").

v1 adds the pattern type (KIP-290: PatternTypeFilter in the request, PatternType per resource
in the response; v0 means LITERAL, their default, and cannot carry another); v2 is the first
flexible version; v3 adds the USER resource type (KIP-373: a code, no field). The codes are
`protocol.acl_codes`' (Kafka's numbers).
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.acl_codes import PatternType
from protocol.api_keys import ApiKey
from protocol.spec import ARRAY, INT8, INT16, INT32, REQUEST, RESPONSE, STRING, Api, Data, F

API_KEY = ApiKey.DESCRIBE_ACLS


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-3", flexible="2+")
    resource_type_filter: Annotated[int, F(INT8)]
    # None: any resource name (and below: any principal, any host)
    resource_name_filter: Annotated[str | None, F(STRING, nullable="0+")]
    pattern_type_filter: Annotated[int, F(INT8, "1+")] = PatternType.LITERAL.value
    principal_filter: Annotated[str | None, F(STRING, nullable="0+")]
    host_filter: Annotated[str | None, F(STRING, nullable="0+")]
    operation: Annotated[int, F(INT8)]
    permission_type: Annotated[int, F(INT8)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponseAclDescription(Data):
    principal: Annotated[str, F(STRING)]
    host: Annotated[str, F(STRING)]
    operation: Annotated[int, F(INT8)]
    permission_type: Annotated[int, F(INT8)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponseDescribeAclsResource(Data):
    resource_type: Annotated[int, F(INT8)]
    resource_name: Annotated[str, F(STRING)]
    pattern_type: Annotated[int, F(INT8, "1+")] = PatternType.LITERAL.value
    acls: Annotated[tuple[DescribeAclsResponseAclDescription, ...], F(ARRAY(DescribeAclsResponseAclDescription))] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-3", flexible="2+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, nullable="0+")] = ""
    resources: Annotated[
        tuple[DescribeAclsResponseDescribeAclsResource, ...], F(ARRAY(DescribeAclsResponseDescribeAclsResource))
    ] = ()
