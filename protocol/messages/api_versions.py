"""ApiVersions (api key 18), versions 0-4, flexible from 3: which APIs and versions a peer speaks.

A client sends it first on every connection. v0-v2 requests are empty; v1 adds the response's
throttle time (v2 only changes when throttling happens); v3 is the first flexible version, the
request names the client software and the response gains tagged feature information (supported
features, finalized features and their epoch, and KRaft's ZK-migration readiness); v4 is v3 on
the wire, but lets a supported feature's minimum version be 0 (KAFKA-17011). Every response uses
response header v0, whatever its version (KIP-511).
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.spec import (
    ARRAY,
    BOOL,
    INT16,
    INT32,
    INT64,
    REQUEST,
    RESPONSE,
    STRING,
    Api,
    Data,
    F,
)
from protocol.versions import Versions

API_KEY = ApiKey.API_VERSIONS


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-4", flexible="3+")
    client_software_name: Annotated[str, F(STRING, "3+", ignorable=True)] = ""
    client_software_version: Annotated[str, F(STRING, "3+", ignorable=True)] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponseApiVersion(Data):
    api_key: Annotated[int, F(INT16)]
    min_version: Annotated[int, F(INT16)] = 0
    max_version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponseSupportedFeatureKey(Data):
    name: Annotated[str, F(STRING, "3+")] = ""
    min_version: Annotated[int, F(INT16, "3+")] = 0
    max_version: Annotated[int, F(INT16, "3+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponseFinalizedFeatureKey(Data):
    name: Annotated[str, F(STRING, "3+")] = ""
    max_version_level: Annotated[int, F(INT16, "3+")] = 0
    min_version_level: Annotated[int, F(INT16, "3+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-4", flexible="3+")
    error_code: Annotated[int, F(INT16)] = 0
    api_keys: Annotated[tuple[ApiVersionsResponseApiVersion, ...], F(ARRAY(ApiVersionsResponseApiVersion))] = ()
    throttle_time_ms: Annotated[int, F(INT32, "1+", ignorable=True)] = 0
    supported_features: Annotated[
        tuple[ApiVersionsResponseSupportedFeatureKey, ...],
        F(ARRAY(ApiVersionsResponseSupportedFeatureKey), "3+", tag=0, ignorable=True),
    ] = ()
    finalized_features_epoch: Annotated[int, F(INT64, "3+", tag=1, ignorable=True)] = -1
    finalized_features: Annotated[
        tuple[ApiVersionsResponseFinalizedFeatureKey, ...],
        F(ARRAY(ApiVersionsResponseFinalizedFeatureKey), "3+", tag=2, ignorable=True),
    ] = ()
    zk_migration_ready: Annotated[bool, F(BOOL, "3+", tag=3, ignorable=True)] = False


def unsupported_version_answer(versions: Versions) -> ApiVersionsResponse:
    """KIP-511: the answer (sent as v0) to an ApiVersions request at a version the server does not
    speak: UNSUPPORTED_VERSION, listing only ApiVersions with the `versions` the server does speak."""
    entry = ApiVersionsResponseApiVersion(
        api_key=ApiKey.API_VERSIONS, min_version=versions.lowest, max_version=versions.highest
    )
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=(entry,))
