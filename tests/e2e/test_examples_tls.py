"""The docs' "Safe to expose" block (docs/controller/security.md), run as written (its port and /tmp/secure
swapped for free ones): examples/tls/mint.py's certificates, the controller behind mTLS with the
StandardAuthorizer, and examples/tls/allow_broker.py's CreateAcls as the super user. Then, with the
controller still running, the broker's certificate registers (the ACL allows CLUSTER_ACTION) but may not
DescribeCluster (ALTER, which no ACL gives it)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import ssl
import subprocess
import uuid
from pathlib import Path

from protocol.error_codes import ErrorCode
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.describe_cluster import DescribeClusterRequest
from tests.test_readme_commands import as_written_script, block_commands, page

from .daemon_process import ROOT, free_port
from .fencer_client import FencerClient


def secure_block() -> list[str]:
    commands = block_commands(page("controller/security.md"))
    assert commands and any("examples/tls/mint.py" in command for command in commands), commands
    return commands


def test_the_secure_quick_start_runs_as_written(tmp_path: Path) -> None:
    port, tmp = free_port(), tmp_path / "secure"
    tmp.mkdir()
    script = as_written_script(secure_block(), "/tmp/secure", tmp, {9095: port})
    process = subprocess.Popen(
        ["bash", "-c", script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # the controller it leaves running is in this group: killed below
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, f"{script}\n{stdout}\n{stderr}"
        assert f"listening on 127.0.0.1:{port}" in stdout
        assert "AclCreationResult(error_code=<ErrorCode.none: 0>" in stdout, stdout
        context = ssl.create_default_context(cafile=tmp / "certs" / "ca.pem")
        context.load_cert_chain(tmp / "certs" / "broker.pem", tmp / "certs" / "broker.key")
        cluster_id = re.search(r"^cluster\.id=(.+)$", (tmp / "data" / "meta.properties").read_text(), re.M)
        assert cluster_id
        listener = BrokerRegistrationRequestListener(name="SSL", host="127.0.0.1", port=1, security_protocol=1)
        request = BrokerRegistrationRequest(
            broker_id=1, cluster_id=cluster_id[1], incarnation_id=uuid.uuid4(), listeners=(listener,)
        )
        with FencerClient(port, tls=context) as broker:
            assert broker.request(request, 3).error_code == ErrorCode.NONE
            assert broker.request(DescribeClusterRequest(), 1).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
