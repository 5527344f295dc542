"""CreateAcls (api key 30), versions 0-3, flexible from 2.

An admin client (`kafka-acls --add`, Admin.createAcls) asks for ACL bindings to be created:
each creation is a resource pattern (type, name, pattern type) and an entry (principal, host,
operation, permission). The response answers every creation, in order, with an error code and
message. A KRaft controller serves it (its listeners include "controller"); it stores each ACL
as an AccessControlEntryRecord.

v1 adds ResourcePatternType (KIP-290, prefixed ACLs; v0 means LITERAL, the field's default, and
cannot carry another); v2 is the first flexible version; v3 adds the USER resource type (KIP-373:
a code, no field). The codes are `protocol.acl_codes`' (Kafka's numbers); the response's results
carry no key of their own, so a result is matched to its creation by position.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.acl_codes import PatternType
from protocol.api_keys import ApiKey
from protocol.spec import ARRAY, INT8, INT16, INT32, REQUEST, RESPONSE, STRING, Api, Data, F

API_KEY = ApiKey.CREATE_ACLS


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsRequestAclCreation(Data):
    resource_type: Annotated[int, F(INT8)]
    resource_name: Annotated[str, F(STRING)]
    resource_pattern_type: Annotated[int, F(INT8, "1+")] = PatternType.LITERAL.value
    principal: Annotated[str, F(STRING)]
    host: Annotated[str, F(STRING)]
    operation: Annotated[int, F(INT8)]
    permission_type: Annotated[int, F(INT8)]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-3", flexible="2+")
    creations: Annotated[tuple[CreateAclsRequestAclCreation, ...], F(ARRAY(CreateAclsRequestAclCreation))]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsResponseAclCreationResult(Data):
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, nullable="0+")] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-3", flexible="2+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    results: Annotated[
        tuple[CreateAclsResponseAclCreationResult, ...], F(ARRAY(CreateAclsResponseAclCreationResult))
    ] = ()
