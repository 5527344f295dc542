"""A fleet run with TLS and ACLs, end to end over real TCP and real TLS (certificates minted by trustme,
one CA): the daemon with `--tls-cert/--tls-key/--tls-ca` (its listener TLS-only, client certificates
required; its control channel presenting the same certificate to the brokers' SSL listeners) and
Kafka's StandardAuthorizer, where a super user (`User:admin`) has let the fleet's principal
(`User:fleet`, its certificate's CN through `--ssl-principal-mapping-rules`) in with ACLs: ALL on
the cluster and on every topic. The fleet runs the chaos scenario with its own certificate: the run
finishes with 0 violations and no authorization error, every broker got LeaderAndIsr over TLS, and
the daemon logged no listener it could not speak to.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kio.schema.create_acls.v3 import request as create_acls

from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.error_codes import ErrorCode
from tests.broker_sim.fleet_command import run_fleet_command
from tests.pki import Pki

from .daemon_process import ROOT, DaemonProcess
from .kio_client import KioClient
from .test_authorization import CN_RULE

SESSION_TIMEOUT_MS = 3000


def allow_all(principal: str, resource_type: ResourceType, name: str) -> object:
    return create_acls.AclCreation(
        resource_type=resource_type.value,
        resource_name=name,
        resource_pattern_type=PatternType.LITERAL.value,
        principal=principal,
        host="*",
        operation=AclOperation.ALL.value,
        permission_type=AclPermissionType.ALLOW.value,
    )


@pytest.mark.slow
def test_the_chaos_scenario_over_tls_with_an_authorised_broker_principal_has_no_violation(tmp_path: Path) -> None:
    pki = Pki(tmp_path / "pki")
    controller = pki.issue("controller", "127.0.0.1")  # its listener's certificate, and its channel's
    fleet = pki.issue("fleet", "127.0.0.1")  # the brokers' client certificate, and their listeners'
    admin = pki.issue("admin")
    tls = ["--tls-cert", str(controller.cert), "--tls-key", str(controller.key), "--tls-ca", str(pki.ca)]
    daemon = DaemonProcess(
        tmp_path / "data",
        *tls,
        "--ssl-principal-mapping-rules", CN_RULE,
        "--authorizer", "standard",
        "--super-users", "User:admin",
        "--session-timeout-ms", str(SESSION_TIMEOUT_MS),
    ).start()  # fmt: skip
    report = tmp_path / "run.json"
    try:
        with KioClient(daemon.port, tls=pki.client_context(admin)) as client:
            wanted = (allow_all("User:fleet", ResourceType.CLUSTER, "kafka-cluster"),
                      allow_all("User:fleet", ResourceType.TOPIC, "*"))  # fmt: skip
            created = client.request(create_acls.CreateAclsRequest(creations=wanted))
            assert [result.error_code for result in created.results] == [ErrorCode.NONE] * 2
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "broker_sim",
                "run",
                "--controller",
                f"127.0.0.1:{daemon.port}",
                "--tls-cert",
                str(fleet.cert),
                "--tls-key",
                str(fleet.key),
                "--tls-ca",
                str(pki.ca),
                "--scenario",
                "chaos",
                "--duration",
                "10",
                "--brokers",
                "5",
                "--topics",
                "3",
                "--partitions",
                "4",
                "--heartbeat-ms",
                "1000",
                "--session-timeout-ms",
                str(SESSION_TIMEOUT_MS),
                "--data-dir",
                str(daemon.data_dir),
                "--report",
                str(report),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        code = daemon.stop()
    assert code == 0, daemon.stderr()
    assert run.returncode == 0, run.stderr + run.stdout[-3000:]
    result = json.loads(report.read_text())
    assert result["outcome"]["finished"] is True
    assert result["violations"] == [] and result["check"]["violations"] == [] and result["check"]["problems"] == []
    stats = result["stats"]
    assert stats["control_requests_by_api"].get("LeaderAndIsr", 0) > 0, "LeaderAndIsr reached the SSL listeners"
    assert not [key for key in stats["errors_by_code"] if "AUTHORIZATION" in key], stats["errors_by_code"]
    stderr = daemon.stderr()
    assert "not connecting" not in stderr, "every broker's SSL listener was reached"
    # a handshake cut short (EOF) by a broker's listener closing at the end of the run is no refusal;
    # any other TLS failure (a certificate refused by either side, an unknown CA) is
    failures = [line for line in stderr.splitlines() if "connection failed (TLS:" in line]
    assert not [line for line in failures if "EOF occurred" not in line], failures


@pytest.mark.slow
def test_the_fleets_own_quorum_serves_tls_with_the_fleets_certificate(tmp_path: Path) -> None:
    """`--quorum 3` with `--tls-*`: the fleet starts its three controllers behind its certificate
    (their Raft links TLS too), finds the leader with DescribeQuorum over TLS, and its brokers
    register and work over TLS: a short steady run, clean, every node's log checked."""
    pki = Pki(tmp_path / "pki")
    fleet = pki.issue("fleet", "127.0.0.1")
    report = tmp_path / "run.json"
    run = run_fleet_command(
        "run", "--quorum=3", f"--quorum-data-dir={tmp_path / 'quorum'}",
        f"--tls-cert={fleet.cert}", f"--tls-key={fleet.key}", f"--tls-ca={pki.ca}",
        "--scenario=steady", "--duration=5", "--brokers=3", "--topics=1", "--partitions=2",
        "--replication-factor=3", "--heartbeat-ms=500", "--session-timeout-ms=3000",
        f"--report={report}",
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(report.read_text())
    assert result["violations"] == [] and result["check"]["violations"] == []
    stats = result["stats"]
    assert stats["requests_by_api"].get("BrokerRegistration", 0) >= 3
    assert stats["control_requests_by_api"].get("LeaderAndIsr", 0) > 0, "the leader reached the SSL listeners"
    for node in (1, 2, 3):  # no node refused a handshake of another, of the fleet's or of its probes'
        log = (tmp_path / "quorum" / f"node-{node}.log").read_text()
        assert "TLS handshake with" not in log, log[-2000:]
