"""A controller quorum behind mTLS: the voters' Raft links are TLS, each node presenting
its `--tls-cert` and checking the others' against `--tls-ca` and the voter's host; with
`--authorizer standard` a voter's Raft RPCs need CLUSTER_ACTION like a broker's, so the
controllers' principal is a super user (as Kafka's controllers are: `super.users`).

Three real daemons, in order: a leader is elected and an ACL created at it (over TLS, by a
super user) reaches every voter's committed state; then a third voter restarted with a
certificate whose principal may not CLUSTER_ACTION, and is not the voters' principal, is refused
(its Raft requests answered CLUSTER_AUTHORIZATION_FAILED, counted by the leader; it refuses the
others' likewise) and never learns the next ACL, while the
two others go on committing it. (ACLs are what replicates here: a topic needs brokers.) A voter
whose certificate comes from another CA is refused at the handshake (counted bad_certificate),
and says so once in its log ("cannot connect (TLS: ...)").
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_acls.v3 import request as create_acls

from controller.raft import messages as rm
from controller.raft import wire_requests
from controller.raft.ids import Epoch, NodeId
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.error_codes import ErrorCode
from tests.pki import Identity, Pki

from .daemon_process import DaemonProcess
from .fencer_client import FencerClient
from .kio_client import KioClient
from .test_quorum import Quorum, running

pytestmark = pytest.mark.xdist_group("quorum")
#: a subject's CN is the principal's name ("User:controller")
CN_RULE = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"


class TlsQuorum(Quorum):
    """test_quorum's three voters, each behind mTLS with the authorizer on."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, 3)
        self.pki = Pki(root / "pki")
        self.controller = self.pki.issue("controller", "127.0.0.1")
        self.intruder = self.pki.issue("intruder", "127.0.0.1")  # the same CA, not a super user
        self.admin = self.pki.issue("admin")

    def start(self, node: int, identity: Identity | None = None) -> DaemonProcess:
        identity = identity or self.controller
        self.extra = (
            "--tls-cert", str(identity.cert), "--tls-key", str(identity.key), "--tls-ca", str(self.pki.ca),
            "--ssl-principal-mapping-rules", CN_RULE,
            "--authorizer", "standard",
            "--super-users", "User:controller;User:admin",
        )  # fmt: skip
        return super().start(node)

    def http(self, node: int, path: str) -> str:
        url = f"http://127.0.0.1:{self.metrics_ports[node - 1]}{path}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return str(answer.read().decode())

    def view(self, node: int) -> dict[str, Any]:
        return dict(json.loads(self.http(node, "/state")))

    def leader(self, among: set[int], timeout: float = 15.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in sorted(among):
                try:
                    if self.view(node)["quorum"]["active_controller"]:
                        return node
                except (OSError, KeyError, ValueError):
                    continue
            time.sleep(0.1)
        raise AssertionError("no active controller")

    def allow(self, node: int, principal: str) -> int:
        """The admin (a super user) lets `principal` CLUSTER_ACTION: an ACL record to replicate (no
        broker needed, unlike a topic)."""
        creation = create_acls.AclCreation(
            resource_type=ResourceType.CLUSTER.value,
            resource_name="kafka-cluster",
            resource_pattern_type=PatternType.LITERAL.value,
            principal=principal,
            host="*",
            operation=AclOperation.CLUSTER_ACTION.value,
            permission_type=AclPermissionType.ALLOW.value,
        )
        with KioClient(self.ports[node - 1], tls=self.pki.client_context(self.admin)) as client:
            return int(client.request(create_acls.CreateAclsRequest(creations=(creation,))).results[0].error_code)

    def principals(self, node: int) -> set[str]:
        """The principals of the ACLs this node's state holds (what it committed and replayed)."""
        return {acl["principal"] for acl in self.view(node)["acls"]}

    def wait_for_acl(self, node: int, principal: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if principal in self.principals(node):
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsQuorum]:
    with running(TlsQuorum(tmp_path_factory.mktemp("tls-quorum"))) as q:
        yield q


def denied(metrics: str, api: str, principal: str) -> float:
    found = re.search(
        rf'^fencer_authorization_denied_total\{{api="{api}",principal="{re.escape(principal)}"\}} (\S+)$', metrics, re.M
    )
    return float(found[1]) if found else 0.0


def test_a_tls_quorum_elects_a_leader_and_replicates_over_tls(quorum: TlsQuorum) -> None:
    leader = quorum.leader({1, 2, 3})
    assert quorum.allow(leader, "User:first") == 0
    for node in (1, 2, 3):
        assert quorum.wait_for_acl(node, "User:first"), f"node {node} never committed the ACL"
    for node in (1, 2, 3):  # every link's handshake went through: none refused on any side
        metrics = quorum.http(node, "/metrics")
        failed = re.findall(r"^fencer_tls_handshake_failures_total\{[^}]*\} (\S+)$", metrics, re.M)
        assert sum(float(count) for count in failed) == 0


def test_a_broker_may_cluster_action_but_not_speak_for_a_voter(quorum: TlsQuorum) -> None:
    """Brokers hold CLUSTER_ACTION in Kafka, which lets any of them fetch as a follower (and move
    the high watermark past what a majority wrote). Here a voter is who its certificate proves:
    a Fetch or a Vote naming a voter from another principal is CLUSTER_AUTHORIZATION_FAILED, and
    counted; the same principal fetching as an observer is served."""
    leader = quorum.leader({1, 2, 3})
    follower = next(node for node in (1, 2, 3) if node != leader)
    assert quorum.allow(leader, "User:broker") == 0
    broker = quorum.pki.client_context(quorum.pki.issue("broker", "127.0.0.1"))
    view = quorum.view(leader)["quorum"]
    epoch, end = Epoch(view["epoch"]), int(view["log_end_offset"])

    def ask(request: rm.Request, version: int) -> Any:
        with FencerClient(quorum.ports[leader - 1], tls=broker) as client:
            return client.request(wire_requests.request_to_wire(request, version), version)

    spoofed = rm.FetchRequest(None, NodeId(follower), epoch, end, epoch, -1, 0)
    assert ask(spoofed, 17).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    vote = rm.VoteRequest(None, Epoch(epoch + 1), NodeId(follower), NodeId(leader), epoch, end)
    assert ask(vote, 1).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    observer = ask(rm.FetchRequest(None, NodeId(4242), epoch, 0, Epoch(0), -1, 0), 17)
    assert observer.error_code == 0 and observer.responses[0].partitions[0].error_code == 0
    assert quorum.view(leader)["quorum"]["epoch"] == epoch
    metrics = quorum.http(leader, "/metrics")
    assert denied(metrics, "Fetch", "User:broker") >= 1 and denied(metrics, "Vote", "User:broker") >= 1


def test_a_voter_whose_principal_may_not_cluster_action_is_refused(quorum: TlsQuorum) -> None:
    leader = quorum.leader({1, 2, 3})
    outsider = next(node for node in (3, 2, 1) if node != leader)
    assert quorum.nodes[outsider].stop() == 0
    quorum.start(outsider, quorum.intruder)
    insiders = {1, 2, 3} - {outsider}
    leader = quorum.leader(insiders)
    assert quorum.allow(leader, "User:second") == 0
    for node in insiders:
        assert quorum.wait_for_acl(node, "User:second")

    def refused() -> float:  # its Fetches (it may still hear of the leader) or its (pre-)votes
        metrics = quorum.http(leader, "/metrics")
        return denied(metrics, "Fetch", "User:intruder") + denied(metrics, "Vote", "User:intruder")

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not refused():
        time.sleep(0.1)
    assert refused() > 0
    assert "User:second" not in quorum.principals(outsider)


def test_a_voter_with_a_certificate_from_another_ca_is_refused_at_the_handshake(quorum: TlsQuorum) -> None:
    leader = quorum.leader({1, 2, 3})
    outsider = next(node for node in (3, 2, 1) if node != leader)
    assert quorum.nodes[outsider].stop() == 0
    stranger = Pki(quorum.root / "other-ca").issue("controller", "127.0.0.1")  # the right name, another CA
    process = quorum.start(outsider, stranger)
    insiders = {1, 2, 3} - {outsider}
    leader = quorum.leader(insiders)
    assert quorum.allow(leader, "User:third") == 0
    deadline = time.monotonic() + 15
    refused = 0.0
    while time.monotonic() < deadline and not refused:
        metrics = quorum.http(leader, "/metrics")
        found = re.search(r'^fencer_tls_handshake_failures_total\{reason="bad_certificate"\} (\S+)$', metrics, re.M)
        refused = float(found[1]) if found else 0.0
        time.sleep(0.1)
    assert refused > 0, "the leader never refused the stranger's certificate"
    assert "User:third" not in quorum.principals(outsider)
    deadline = time.monotonic() + 10
    while "cannot connect (TLS:" not in process.stderr() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "cannot connect (TLS:" in process.stderr(), process.stderr()[-2000:]
