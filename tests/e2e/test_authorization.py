"""The daemon behind mTLS with Kafka's StandardAuthorizer: principals come from client
certificates through `--ssl-principal-mapping-rules`; a principal without CLUSTER_ACTION gets
CLUSTER_AUTHORIZATION_FAILED on every broker API and the log does not move; a super user's ACLs
let a broker principal in, across a restart (they are records of the metadata log); DescribeAcls
and DeleteAcls answer as Kafka does (kio 0.5.0 decodes them); a removed ACL shuts the door again.
"""

from __future__ import annotations

import re
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_acls.v3 import request as create_acls
from kio.schema.delete_acls.v3 import request as delete_acls
from kio.schema.describe_acls.v3 import request as describe_acls

from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionRequest
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from tests.pki import Identity, Pki

from .daemon_process import DaemonProcess, free_port
from .fencer_client import FencerClient
from .kio_client import KioClient

#: a subject's CN is the principal's name ("User:admin"), every other subject as Java prints it
CN_RULE = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"
CLUSTER, LITERAL, ALLOW = ResourceType.CLUSTER.value, PatternType.LITERAL.value, AclPermissionType.ALLOW.value
CLUSTER_ACTION, ANY_OPERATION = AclOperation.CLUSTER_ACTION.value, AclOperation.ANY.value
ANY_TYPE, ANY_PERMISSION, ANY_PATTERN = ResourceType.ANY.value, AclPermissionType.ANY.value, PatternType.ANY.value
DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class Secured:
    def __init__(self, root: Path) -> None:
        self.pki = Pki(root / "pki")
        self.server = self.pki.issue("controller", "127.0.0.1")
        self.admin, self.broker = self.pki.issue("admin"), self.pki.issue("broker")
        self.data = root / "data"
        self.metrics_port = free_port()
        self.daemon: DaemonProcess | None = None

    def start(self) -> DaemonProcess:
        tls = ["--tls-cert", str(self.server.cert), "--tls-key", str(self.server.key), "--tls-ca", str(self.pki.ca)]
        self.daemon = DaemonProcess(
            self.data,
            *tls,
            "--ssl-principal-mapping-rules", CN_RULE,
            "--authorizer", "standard",
            "--super-users", " User:admin ; User:nobody ",
            "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
        ).start()  # fmt: skip
        return self.daemon

    def stop(self) -> None:
        if self.daemon is not None:
            assert self.daemon.stop() == 0, self.daemon.stderr()
            self.daemon = None

    def client(self, who: Identity) -> FencerClient:
        assert self.daemon is not None
        return FencerClient(self.daemon.port, tls=self.pki.client_context(who))

    def admin_client(self) -> KioClient:
        assert self.daemon is not None
        return KioClient(self.daemon.port, tls=self.pki.client_context(self.admin))

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as answer:
            return str(answer.read().decode())


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Secured]:
    secured = Secured(tmp_path)
    secured.start()
    yield secured
    secured.stop()


def gauge(metrics: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", metrics, re.M)
    assert found, name
    return float(found[1])


def registration(cluster_id: str) -> BrokerRegistrationRequest:
    listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1)
    return BrokerRegistrationRequest(
        broker_id=1, cluster_id=cluster_id, incarnation_id=uuid.uuid4(), listeners=(listener,)
    )


def broker_requests(cluster_id: str) -> list[tuple[Any, int]]:
    """One request of each broker API, at a version each (what a broker principal sends)."""
    return [
        (registration(cluster_id), 3),
        (BrokerHeartbeatRequest(broker_id=1, broker_epoch=1, current_metadata_offset=0), 1),
        (AlterPartitionRequest(broker_id=1, broker_epoch=1, topics=()), 2),
        (ControlledShutdownRequest(broker_id=1, broker_epoch=1), 3),
    ]


def acl_binding(principal: str) -> Any:
    return create_acls.AclCreation(
        resource_type=CLUSTER,
        resource_name="kafka-cluster",
        resource_pattern_type=LITERAL,
        principal=principal,
        host="*",
        operation=CLUSTER_ACTION,
        permission_type=ALLOW,
    )


def test_a_broker_principal_is_refused_until_a_super_user_lets_it_in_and_again_once_removed(
    secured: Secured,
) -> None:
    with secured.client(secured.admin) as admin:
        cluster_id = admin.request(DescribeClusterRequest(), 1).cluster_id  # ALTER on the cluster: a super user

    # no ACL names the broker: every broker API is CLUSTER_AUTHORIZATION_FAILED, nothing written
    with secured.client(secured.broker) as broker:
        for request, version in broker_requests(cluster_id):
            answer = broker.request(request, version)
            codes = [answer.error_code] if hasattr(answer, "error_code") else []
            assert codes == [DENIED], (type(request).__name__, answer)
        assert broker.request(DescribeClusterRequest(), 1).error_code == DENIED  # ALTER on the cluster
    denied = re.findall(r'^fencer_authorization_denied_total\{api="(\w+)",principal="User:broker"\} (\S+)$',
                        secured.metrics(), re.M)  # fmt: skip
    assert {api for api, count in denied if float(count) >= 1} == {
        "BrokerRegistration", "BrokerHeartbeat", "AlterPartition", "ControlledShutdown", "DescribeCluster",
    }  # fmt: skip

    # the super user allows the broker CLUSTER_ACTION on the cluster
    with secured.admin_client() as admin:
        created = admin.request(create_acls.CreateAclsRequest(creations=(acl_binding("User:broker"),)))
        assert [result.error_code for result in created.results] == [ErrorCode.NONE]
    with secured.client(secured.broker) as broker:
        assert broker.request(registration(cluster_id), 3).error_code == ErrorCode.NONE

    # across a restart: the ACL is a record of the log
    secured.stop()
    secured.start()
    with secured.client(secured.broker) as broker:
        assert broker.request(registration(cluster_id), 3).error_code == ErrorCode.NONE
    with secured.admin_client() as admin:
        wanted = describe_acls.DescribeAclsRequest(
            resource_type_filter=ANY_TYPE, resource_name_filter=None, pattern_type_filter=ANY_PATTERN,
            principal_filter=None, host_filter=None, operation=ANY_OPERATION, permission_type=ANY_PERMISSION,
        )  # fmt: skip
        described = admin.request(wanted)
        assert described.error_code == ErrorCode.NONE
        assert [(r.resource_type, r.resource_name, r.pattern_type) for r in described.resources] == [
            (CLUSTER, "kafka-cluster", LITERAL)
        ]
        assert [(a.principal, a.host, a.operation, a.permission_type) for a in described.resources[0].acls] == [
            ("User:broker", "*", CLUSTER_ACTION, ALLOW)
        ]
        filters = delete_acls.DeleteAclsFilter(
            resource_type_filter=CLUSTER, resource_name_filter="kafka-cluster", pattern_type_filter=LITERAL,
            principal_filter="User:broker", host_filter=None, operation=ANY_OPERATION, permission_type=ANY_PERMISSION,
        )  # fmt: skip
        deleted = admin.request(delete_acls.DeleteAclsRequest(filters=(filters,)))
        (result,) = deleted.filter_results
        assert result.error_code == ErrorCode.NONE
        assert [(m.principal, m.operation, m.resource_name) for m in result.matching_acls] == [
            ("User:broker", CLUSTER_ACTION, "kafka-cluster")
        ]
    with secured.client(secured.broker) as broker:
        assert broker.request(registration(cluster_id), 3).error_code == DENIED


def test_a_refused_request_writes_nothing(secured: Secured) -> None:
    with secured.client(secured.admin) as admin:
        cluster_id = admin.request(DescribeClusterRequest(), 1).cluster_id
    end = gauge(secured.metrics(), "fencer_raft_log_end_offset")
    with secured.client(secured.broker) as broker:
        for request, version in broker_requests(cluster_id):
            assert broker.request(request, version).error_code == DENIED
    with secured.client(secured.admin) as admin:  # a request behind them: they were decided by then
        admin.request(DescribeClusterRequest(), 1)
    assert gauge(secured.metrics(), "fencer_raft_log_end_offset") == end
