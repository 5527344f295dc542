"""The ACL APIs end to end, without an authorizer: the real daemon, a real TCP
listener, and kio 0.5.0 (an implementation independent of fencer's codec) writing each request
and reading each answer. ApiVersions lists DescribeAcls (29), CreateAcls (30) and DeleteAcls (31)
at 0-3; each is answered at its lowest and highest version as Kafka's controller answers without
an authorizer (AclApis): SECURITY_DISABLED (54), DescribeAcls at the top level, CreateAcls for
each creation, DeleteAcls for each filter, with Kafka's messages. Nothing is written to the log,
and /metrics counts each answer by API, version and error."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.messages.create_acls import CreateAclsRequest, CreateAclsRequestAclCreation
from protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsRequestDeleteAclsFilter
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.spec import Data

from . import kio_messages as m
from .daemon_process import DaemonProcess, free_port
from .fencer_client import FencerClient
from .kio_client import KioClient

SECURITY_DISABLED = 54
LOWEST_AND_HIGHEST = (0, 3)


@pytest.fixture
def metrics_port() -> int:
    return free_port()


@pytest.fixture
def daemon(tmp_path: Path, metrics_port: int) -> Iterator[DaemonProcess]:
    process = DaemonProcess(tmp_path / "data", "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    yield process
    assert process.stop() == 0, process.stderr()


def metric(port: int, sample: str) -> float:
    """One sample of /metrics (`name{labels}` as prometheus_client writes it); 0 if absent."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.M)
    return float(found[1]) if found else 0.0


def test_api_versions_lists_the_acl_apis_0_to_3(daemon: DaemonProcess) -> None:
    with KioClient(daemon.port) as client:
        for version in (0, 4):
            response = client.request(m.api_versions(version))
            assert response.error_code == 0
            ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
            assert {key: ranges.get(key) for key in (29, 30, 31)} == {29: (0, 3), 30: (0, 3), 31: (0, 3)}


@pytest.mark.parametrize("version", LOWEST_AND_HIGHEST)
def test_each_acl_api_is_answered_security_disabled(daemon: DaemonProcess, metrics_port: int, version: int) -> None:
    offset = "fencer_controller_last_applied_record_offset"
    written = metric(metrics_port, offset)
    with KioClient(daemon.port) as client:
        described = client.request(m.describe_acls(version))
        assert (described.error_code, described.error_message, described.resources) == (
            SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
            (),
        )

        created = client.request(m.create_acls(version, "a", "b"))
        assert [(r.error_code, r.error_message) for r in created.results] == [
            (SECURITY_DISABLED, "No Authorizer is configured.")
        ] * 2

        deleted = client.request(m.delete_acls(version, "a", "b", "c"))
        assert [(r.error_code, r.error_message, r.matching_acls) for r in deleted.filter_results] == [
            (SECURITY_DISABLED, "No Authorizer is configured.", ())
        ] * 3
        # the connection stays open, and the daemon serves on
        assert client.request(m.api_versions(3)).error_code == 0
    assert metric(metrics_port, offset) == written
    for api in ("DescribeAcls", "CreateAcls", "DeleteAcls"):
        sample = f'fencer_requests_total{{api="{api}",error="SECURITY_DISABLED",version="{version}"}}'
        assert metric(metrics_port, sample) == 1


@pytest.mark.parametrize("api", ("CreateAcls", "DeleteAcls", "DescribeAcls"))
def test_a_code_0_unknown_is_refused_as_kafka_parses_it_closing_the_connection(
    daemon: DaemonProcess, metrics_port: int, api: str
) -> None:
    """Kafka's request classes refuse a code 0 (UNKNOWN) while parsing: no answer, the connection
    closes; a code Kafka does not know at all (99) parses and is answered (SECURITY_DISABLED here)."""
    unknown, unheard_of = acl_request(api, operation=0), acl_request(api, operation=99)
    with FencerClient(daemon.port) as client:
        answer = client.request(unheard_of, 3)
        codes = getattr(answer, "results", None) or getattr(answer, "filter_results", None) or (answer,)
        assert {item.error_code for item in codes} == {SECURITY_DISABLED}
        client.send(unknown, 3)
        assert client.sock.recv(1) == b""  # closed, unanswered
    assert metric(metrics_port, 'fencer_invalid_frames_total{reason="invalid_request"}') == 1
    with FencerClient(daemon.port) as client:  # the daemon serves on
        assert client.request(unheard_of, 3) is not None


def acl_request(api: str, operation: int) -> Data:
    """A request of `api` whose one creation or filter asks for `operation` (a topic, ALLOW)."""
    if api == "CreateAcls":
        creation = CreateAclsRequestAclCreation(
            resource_type=2, resource_name="t", principal="User:a", host="*", operation=operation, permission_type=3
        )
        return CreateAclsRequest(creations=(creation,))
    fields = {
        "resource_type_filter": 2,
        "resource_name_filter": "t",
        "principal_filter": None,
        "host_filter": None,
        "operation": operation,
        "permission_type": 3,
    }
    if api == "DeleteAcls":
        return DeleteAclsRequest(filters=(DeleteAclsRequestDeleteAclsFilter(**fields),))
    return DescribeAclsRequest(**fields)
