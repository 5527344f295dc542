"""DescribeCluster: hand-derived golden bytes and the version rule of EndpointType."""

import pytest

from protocol.compiler import codec
from protocol.errors import EncodeError
from protocol.messages.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseDescribeClusterBroker,
)


def test_request_v1_golden() -> None:
    message = DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=2)
    golden = bytes.fromhex(
        "01"  # include_cluster_authorized_operations: true
        "02"  # endpoint_type: 2 (controllers)
        "00"  # tag buffer
    )
    assert codec(DescribeClusterRequest, 1).encode(message) == golden
    assert codec(DescribeClusterRequest, 1).decode_exact(golden) == message


def test_response_v1_golden() -> None:
    message = DescribeClusterResponse(
        error_message=None,
        endpoint_type=2,
        cluster_id="abc",
        controller_id=3000,
        brokers=(DescribeClusterResponseDescribeClusterBroker(broker_id=3000, host="c1", port=9093, rack=None),),
    )
    golden = bytes.fromhex(
        "00000000"  # throttle_time_ms 0
        "0000"  # error_code 0
        "00"  # error_message: compact nullable string, null
        "02"  # endpoint_type 2
        "04"
        "616263"  # cluster_id "abc"
        "00000bb8"  # controller_id 3000
        "02"  # brokers: 1 element
        "00000bb8"  # broker_id 3000
        "03"
        "6331"  # host "c1"
        "00002385"  # port 9093
        "00"  # rack: null
        "00"  # element tag buffer
        "80000000"  # cluster_authorized_operations: INT32 minimum (not requested)
        "00"  # tag buffer
    )
    assert codec(DescribeClusterResponse, 1).encode(message) == golden
    assert codec(DescribeClusterResponse, 1).decode_exact(golden) == message


def test_v0_has_no_endpoint_type() -> None:
    assert codec(DescribeClusterRequest, 0).encode(DescribeClusterRequest()) == bytes.fromhex("0000")
    with pytest.raises(EncodeError, match="endpoint_type is not in version 0"):
        codec(DescribeClusterRequest, 0).encode(DescribeClusterRequest(endpoint_type=2))
    with pytest.raises(EncodeError, match="endpoint_type is not in version 0"):
        codec(DescribeClusterResponse, 0).encode(DescribeClusterResponse(endpoint_type=2))
