"""DescribeCluster (api key 60), versions 0-1, flexible from 0: the cluster id, controller and nodes.

Admin tools (and the fleet) learn the cluster id and the reachable nodes from it. v1 (KIP-919)
adds EndpointType to both directions: 1 asks for the brokers, 2 for the controllers; v1 also
allows the MISMATCHED_ENDPOINT_TYPE and UNSUPPORTED_ENDPOINT_TYPE top-level errors.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    BOOL,
    INT8,
    INT16,
    INT32,
    REQUEST,
    RESPONSE,
    STRING,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.DESCRIBE_CLUSTER


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-1", flexible="0+")
    include_cluster_authorized_operations: Annotated[bool, F(BOOL)] = False
    endpoint_type: Annotated[int, F(INT8, "1+")] = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterResponseDescribeClusterBroker(Data):
    broker_id: Annotated[int, F(INT32)]
    host: Annotated[str, F(STRING)] = ""
    port: Annotated[int, F(INT32)] = 0
    rack: Annotated[str | None, F(STRING, nullable="0+")] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-1", flexible="0+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, nullable="0+")] = None
    endpoint_type: Annotated[int, F(INT8, "1+")] = 1
    cluster_id: Annotated[str, F(STRING)] = ""
    controller_id: Annotated[int, F(INT32)] = -1
    brokers: Annotated[
        tuple[DescribeClusterResponseDescribeClusterBroker, ...],
        F(ARRAY(DescribeClusterResponseDescribeClusterBroker)),
    ] = ()
    cluster_authorized_operations: Annotated[int, F(INT32)] = -2147483648
