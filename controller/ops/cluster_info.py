"""Read-only requests: ApiVersions and DescribeCluster.

ApiVersions lists the APIs the controller serves (v3+ also validates the client software name
and version as Kafka does: INVALID_REQUEST). DescribeCluster answers the cluster id and the
controller id; endpoint type 1 (brokers, and v0) lists every registered broker's first listener,
type 2 (controllers) the controller itself, anything else is UNSUPPORTED_ENDPOINT_TYPE.
"""

from __future__ import annotations

import re

from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.messages.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseDescribeClusterBroker,
)

from ..state.controller_state import ControllerState, Result
from .served import INBOUND_API_KEYS, served_versions

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
BROKERS = 1
CONTROLLERS = 2


def supported_apis() -> tuple[ApiVersionsResponseApiVersion, ...]:
    return tuple(
        ApiVersionsResponseApiVersion(
            api_key=key, min_version=served_versions(key).lowest, max_version=served_versions(key).highest
        )
        for key in sorted(INBOUND_API_KEYS)
    )


def api_versions(request: ApiVersionsRequest, version: int) -> Result:
    if version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name) and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        return Result(ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST))
    return Result(ApiVersionsResponse(api_keys=supported_apis()))


def describe_cluster(state: ControllerState, request: DescribeClusterRequest, version: int) -> Result:
    endpoint_type = request.endpoint_type if version >= 1 else BROKERS
    config = state.config
    base = DescribeClusterResponse(
        endpoint_type=endpoint_type, cluster_id=config.cluster_id, controller_id=config.node_id
    )
    if endpoint_type == CONTROLLERS:
        me = DescribeClusterResponseDescribeClusterBroker(broker_id=config.node_id, host=config.host, port=config.port)
        return Result(_with(base, (me,)))
    if endpoint_type != BROKERS:
        return Result(
            DescribeClusterResponse(
                endpoint_type=endpoint_type,
                error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                error_message=f"endpoint type {endpoint_type} is not supported",
            )
        )
    brokers = tuple(
        DescribeClusterResponseDescribeClusterBroker(
            broker_id=reg.broker_id, host=reg.listeners[0].host, port=reg.listeners[0].port, rack=reg.rack
        )
        for reg in (state.cluster.brokers[b] for b in sorted(state.cluster.brokers))
        if reg.listeners
    )
    return Result(_with(base, brokers))


def _with(
    base: DescribeClusterResponse, brokers: tuple[DescribeClusterResponseDescribeClusterBroker, ...]
) -> DescribeClusterResponse:
    import dataclasses

    return dataclasses.replace(base, brokers=brokers)
