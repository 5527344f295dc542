"""Kafka's request classes' own checks, made while a request is parsed: a request that fails one
never reaches a handler, and Kafka's SocketServer closes the connection without an answer.

Rules (Kafka 3.9, `clients/.../common/requests`, each class's constructor `validate`):
- CreateAcls: a creation with code 0 (UNKNOWN) as its resource type, pattern type, operation or
  permission type ("CreatableAcls contain unknown elements").
- DeleteAcls: a filter with code 0 in any of the same four ("Filters contain UNKNOWN elements").
- DescribeAcls: its filter likewise ("DescribeAclsRequest contains UNKNOWN elements").
- Only code 0 is refused here: a code Kafka does not know at all (99) parses, and is the
  handler's to answer (`controller.ops.acls`). Kafka's v0 checks (a pattern type other than
  LITERAL, ANY read as LITERAL for filters) cannot fire on the wire: v0 carries no pattern type,
  which decodes as LITERAL (the schemas' default).
- The codec decodes such requests (a capture holds what was on the wire, `analytics` reads
  them); the daemon's listener refuses them with `decode_served`, as it refuses a frame that does
  not decode (`InvalidRequestError`, reason "invalid_request": counted, logged, closed).
- `decode_served` is how the listener decodes every request: the api keys it is given
  (`controller.ops.served.INBOUND_API_KEYS`) at the versions the controller serves
  (`SERVED_VERSIONS`), checked from the request's first bytes before its body is decoded, then
  these checks.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import DecodeError, UnsupportedVersionError
from protocol.registry import Request, decode_request, peek_request

from ..ops.served import SERVED_VERSIONS

UNKNOWN = 0


class InvalidRequestError(DecodeError):
    """A request Kafka's request class refuses while parsing it."""

    reason = "invalid_request"


def _unknown(item: Any, *fields: str) -> bool:
    return any(getattr(item, name) == UNKNOWN for name in fields)


def refusal(api_key: int, body: Any) -> str | None:
    """Kafka's parse-time refusal of a decoded request body, or None."""
    if api_key == ApiKey.CREATE_ACLS:
        fields = ("resource_type", "resource_pattern_type", "operation", "permission_type")
        if any(_unknown(creation, *fields) for creation in body.creations):
            return "CreatableAcls contain unknown elements"
    elif api_key == ApiKey.DELETE_ACLS:
        fields = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")
        if any(_unknown(item, *fields) for item in body.filters):
            return "Filters contain UNKNOWN elements"
    elif api_key == ApiKey.DESCRIBE_ACLS and _unknown(
        body, "resource_type_filter", "pattern_type_filter", "operation", "permission_type"
    ):
        return "DescribeAclsRequest contains UNKNOWN elements"
    return None


def decode_served(payload: bytes, allowed: frozenset[int] | None = None) -> Request:
    """`decode_request`, then Kafka's parse-time checks: `InvalidRequestError` on a refusal.

    `allowed` limits the api keys accepted (the listener's `INBOUND_API_KEYS`): others raise
    `UnknownApiError` as if the key did not exist, and a version outside `SERVED_VERSIONS` of an
    allowed key raises `UnsupportedVersionError`, before the body is decoded.
    """
    if allowed is not None:
        key, version, correlation = peek_request(payload)
        served = SERVED_VERSIONS.get(key)
        if served is not None and key in allowed and version not in served:
            raise UnsupportedVersionError(key, version, correlation)
    request = decode_request(payload, allowed)
    key = request.api_key
    if key in CHECKED_KEYS:
        reason = refusal(key, request.body)
        if reason is not None:
            raise InvalidRequestError(f"{reason} (api key {key} v{request.api_version})")
    return request


CHECKED_KEYS = frozenset({ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_ACLS})
