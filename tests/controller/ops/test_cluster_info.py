"""ApiVersions and DescribeCluster: read-only, no records."""

from __future__ import annotations

import pytest

from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.messages.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseDescribeClusterBroker,
)

from ..harness import CLUSTER_ID, Harness

# docs/protocol.md, "Inbound APIs" and "Added by the quorum and security issues" (the ACL APIs, 29-31,
# among them): key -> (lowest, highest) version served
# (Vote to v2, Kafka 4.0's pre-vote: protocol.md's row says 0-1, with pre-vote in v1, which Kafka's
# schema contradicts)
PROTOCOL_MD = {
    1: (13, 17),
    7: (0, 3),
    18: (0, 4),
    19: (2, 7),
    20: (1, 6),
    29: (0, 3),
    30: (0, 3),
    31: (0, 3),
    43: (0, 2),
    52: (0, 2),
    53: (0, 1),
    54: (0, 1),
    55: (0, 2),
    56: (0, 3),
    59: (0, 1),
    60: (0, 1),
    62: (0, 4),
    63: (0, 1),
    1000: (0, 1),
}
CONTROLLER_ID = 3000  # the harness's node id


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_lists_the_inbound_apis_with_protocol_md_versions(version: int) -> None:
    h = Harness()
    request = ApiVersionsRequest(client_software_name="fencer-test", client_software_version="1.0.0")
    response, records = h.send(request, version)
    assert response == ApiVersionsResponse(
        api_keys=tuple(
            ApiVersionsResponseApiVersion(api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(PROTOCOL_MD.items())
        )
    )
    assert records == []


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize(
    ("name", "software_version"),
    [("", "1.0"), ("-bad", "1.0"), ("bad-", "1.0"), ("sp ace", "1.0"), ("ok", ""), ("ok", "1.0!")],
)
def test_api_versions_v3_plus_invalid_client_software_is_invalid_request(
    version: int, name: str, software_version: str
) -> None:
    h = Harness()
    request = ApiVersionsRequest(client_software_name=name, client_software_version=software_version)
    response, records = h.send(request, version)
    assert response == ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    assert records == []


@pytest.mark.parametrize("version", [0, 1, 2])
def test_api_versions_before_v3_does_not_check_the_software_name(version: int) -> None:
    response, _ = Harness().send(ApiVersionsRequest(client_software_name="", client_software_version=""), version)
    assert response.error_code == ErrorCode.NONE and response.api_keys


def _cluster() -> Harness:
    h = Harness()
    h.start_brokers(2, 0)
    h.register(1, rack="r1")  # registered, still fenced: listed all the same
    return h


def _brokers() -> tuple[DescribeClusterResponseDescribeClusterBroker, ...]:
    return tuple(
        DescribeClusterResponseDescribeClusterBroker(
            broker_id=b, host="localhost", port=9000 + b, rack="r1" if b == 1 else None
        )
        for b in (0, 1, 2)
    )


@pytest.mark.parametrize(("version", "endpoint_type"), [(0, 1), (0, 2), (1, 1)])
def test_describe_cluster_brokers_lists_every_registered_broker(version: int, endpoint_type: int) -> None:
    """v0 has no endpoint type on the wire: it always asks for brokers."""
    h = _cluster()
    response, records = h.send(DescribeClusterRequest(endpoint_type=endpoint_type), version)
    assert response == DescribeClusterResponse(
        endpoint_type=1, cluster_id=CLUSTER_ID, controller_id=CONTROLLER_ID, brokers=_brokers()
    )
    assert records == []


def test_describe_cluster_controllers_lists_the_controller_itself() -> None:
    h = _cluster()
    response, records = h.send(DescribeClusterRequest(endpoint_type=2), 1)
    config = h.core.config
    assert response == DescribeClusterResponse(
        endpoint_type=2,
        cluster_id=CLUSTER_ID,
        controller_id=CONTROLLER_ID,
        brokers=(
            DescribeClusterResponseDescribeClusterBroker(broker_id=CONTROLLER_ID, host=config.host, port=config.port),
        ),
    )
    assert records == []


@pytest.mark.parametrize("endpoint_type", [0, 3])
def test_describe_cluster_unknown_endpoint_type_is_unsupported(endpoint_type: int) -> None:
    response, records = _cluster().send(DescribeClusterRequest(endpoint_type=endpoint_type), 1)
    assert response.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    assert response.brokers == () and records == []
