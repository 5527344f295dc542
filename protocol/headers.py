"""Request and response headers, and Kafka's rules for which header version a message uses.

- Request header: v2 for flexible request versions, otherwise v1; ControlledShutdown v0 uses v0
  (it predates the client id).
- Response header: v1 for flexible response versions, otherwise v0; every ApiVersions response
  uses v0 (KIP-511: a client must be able to read it before it knows what the server speaks).
- Header v2 stays readable by old parsers: its client id keeps the INT16 length (never compact).
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from .api_keys import ApiKey
from .spec import HEADER, INT16, INT32, STRING, Api, Data, F


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHeader(Data):
    API: ClassVar[Api] = Api.of(-1, HEADER, valid="0-2", flexible="2+")
    request_api_key: Annotated[int, F(INT16)]
    request_api_version: Annotated[int, F(INT16)]
    correlation_id: Annotated[int, F(INT32)]
    client_id: Annotated[str | None, F(STRING, "1+", nullable="1+", ignorable=True, flexible="none")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseHeader(Data):
    API: ClassVar[Api] = Api.of(-1, HEADER, valid="0-1", flexible="1+")
    correlation_id: Annotated[int, F(INT32)]


def request_header_version(api_key: int, api_version: int, flexible: bool) -> int:
    """The request header version of a request, given whether its body version is flexible."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    """The response header version of a response, given whether its body version is flexible."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if flexible else 0
