"""Bad input over the wire: each case closes only its own connection, and changes no state.

Garbage, a truncated frame then close, a 2 GiB size prefix, an unknown api key, an API the
controller does not serve (LeaderAndIsr, UpdateMetadata), an unsupported version, trailing bytes,
and ApiVersions v99 (answered with the KIP-511 v0 fallback). Another connection keeps working
throughout, and the metadata log is byte-for-byte the same afterwards.
"""

from __future__ import annotations

import struct
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.update_metadata import UpdateMetadataRequest
from protocol.registry import encode_request

from . import kio_messages as m
from .daemon_process import DaemonProcess, free_port
from .fencer_client import FencerClient
from .kio_client import KioClient

SEGMENT = "__cluster_metadata-0/00000000000000000000.log"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    process = DaemonProcess(tmp_path_factory.mktemp("bad") / "data").start()
    with KioClient(process.port) as client:
        cluster = client.request(m.describe_cluster(1)).cluster_id
        epoch = client.request(m.broker_registration(3, 1, cluster, uuid.UUID(int=1), 9999)).broker_epoch
        client.request(m.broker_heartbeat(1, 1, epoch))
        assert client.request(m.create_topics(7, "t", 1, 1)).topics[0].error_code == 0
    yield process
    assert process.stop() == 0, process.stderr()


def header(key: int, version: int, correlation: int = 7) -> bytes:
    return struct.pack(">hhih", key, version, correlation, -1)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


CASES = {
    "garbage": b"\x00\x00\x00\x10" + bytes(range(16)),
    "unknown_api_key": framed(header(999, 0)),
    "unsupported_version": framed(header(56, 9) + b"\x00"),
    "not_served_here": framed(header(4, 0)),  # LeaderAndIsr goes to brokers, not to the controller
    # a well-formed UpdateMetadata: the codec decodes it (for analytics), the controller does not serve it
    "update_metadata": encode_request(
        UpdateMetadataRequest(controller_id=1, controller_epoch=2, live_brokers=()), 8, 7
    ),
    "undecodable_body": framed(header(62, 0) + b"\x00\x00\x00\x01\xff\xff"),
    "trailing_bytes": framed(encode_request(ApiVersionsRequest(), 0, 7)[4:] + b"\x00"),
    "size_prefix_2_gib": struct.pack(">i", 2**31 - 1) + b"x" * 100,
    "negative_size_prefix": struct.pack(">i", -5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_frames_close_only_their_connection_and_change_nothing(daemon: DaemonProcess, case: str) -> None:
    log_before = (daemon.data_dir / SEGMENT).read_bytes()
    with KioClient(daemon.port) as bystander, KioClient(daemon.port) as offender:
        assert bystander.request(m.api_versions(3)).error_code == 0
        offender.send_raw(CASES[case])
        assert offender.closed_by_peer(), f"{case}: the connection stayed open"
        # the bystander's connection, and new ones, keep working
        assert bystander.request(m.describe_cluster(1)).error_code == 0
    with KioClient(daemon.port) as fresh:
        assert fresh.request(m.api_versions(0)).error_code == 0
    assert (daemon.data_dir / SEGMENT).read_bytes() == log_before


def test_truncated_frame_then_close(daemon: DaemonProcess) -> None:
    log_before = (daemon.data_dir / SEGMENT).read_bytes()
    with KioClient(daemon.port) as offender:
        payload = encode_request(ApiVersionsRequest(), 0, 1)
        offender.send_raw(payload[: len(payload) // 2])
    with KioClient(daemon.port) as fresh:
        assert fresh.request(m.api_versions(1)).error_code == 0
    assert (daemon.data_dir / SEGMENT).read_bytes() == log_before


def test_api_versions_v99_gets_the_kip511_fallback(daemon: DaemonProcess) -> None:
    with KioClient(daemon.port) as client:
        # header v2 (ApiVersions is flexible from v3), then a body nobody can know
        client.send_raw(framed(struct.pack(">hhih", 18, 99, 42, 3) + b"kio" + b"\x00" + b"\x00\x00"))
        response = client.read_frame()
        correlation, error, count = struct.unpack_from(">ihi", response)
        assert (correlation, error, count) == (42, 35, 1)
        assert struct.unpack_from(">hhh", response, 10) == (18, 0, 4)
        assert len(response) == 16  # v0: no throttle time, no tag buffer
        # the connection stays usable: the client now retries at v4
        assert client.request(m.api_versions(4)).error_code == 0


def test_a_flood_of_pipelined_frames_is_answered_in_order(daemon: DaemonProcess) -> None:
    """Thousands of frames in one write, each answered by the connection itself (KIP-511
    fallback) or by the writer, strictly in order; the daemon neither nests nor falls over."""
    count = 3000
    frames = [
        framed(struct.pack(">hhih", 18, 99, i, 3) + b"kio" + b"\x00" + b"\x00\x00")
        if i % 1000
        else encode_request(ApiVersionsRequest(), 0, i)
        for i in range(count)
    ]
    with KioClient(daemon.port) as flooder, KioClient(daemon.port) as bystander:
        flooder.send_raw(b"".join(frames))
        correlations = [struct.unpack_from(">i", flooder.read_frame())[0] for _ in range(count)]
        assert correlations == list(range(count))
        assert bystander.request(m.api_versions(3)).error_code == 0
        assert flooder.request(m.describe_cluster(1)).error_code == 0


def test_invalid_frames_are_counted(tmp_path: Path) -> None:
    from .daemon_process import free_port

    metrics_port = free_port()
    process = DaemonProcess(tmp_path / "data", "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    try:
        with KioClient(process.port) as offender:
            offender.send_raw(CASES["unknown_api_key"])
            assert offender.closed_by_peer()
        import urllib.request

        text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
        assert 'fencer_invalid_frames_total{reason="unknown_api"} 1.0' in text
    finally:
        assert process.stop() == 0, process.stderr()


def test_an_answer_that_cannot_be_encoded_closes_only_its_connection_and_is_counted(tmp_path: Path) -> None:
    """The daemon's copy whose DescribeCluster answers fail to encode: that connection closes
    unanswered and the failure is counted and logged; the daemon goes on answering everyone else."""
    metrics_port = free_port()
    options = ("--metrics-listen", f"127.0.0.1:{metrics_port}")
    process = DaemonProcess(tmp_path / "data", *options, module="tests.e2e.unencodable_daemon").start()
    try:
        with KioClient(process.port) as bystander, KioClient(process.port) as offender:
            assert bystander.request(m.api_versions(3)).error_code == 0
            offender.send_raw(encode_request(DescribeClusterRequest(), 1, 7))
            assert offender.closed_by_peer()
            assert bystander.request(m.api_versions(2)).error_code == 0
        with KioClient(process.port) as fresh:
            assert fresh.request(m.api_versions(0)).error_code == 0
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
        assert 'fencer_request_failures_total{stage="encode"} 1.0' in text
        assert "cannot encode the answer to DescribeCluster" in process.stderr()
    finally:
        assert process.stop() == 0, process.stderr()


def test_a_topic_name_too_long_to_quote_is_still_answered(tmp_path: Path) -> None:
    """A 32,760-byte name named twice at CreateTopics v4: the refusal quotes it cut short, so the
    answer fits (quoted whole it could not be encoded, and the connection closed unanswered)."""
    process = DaemonProcess(tmp_path / "data").start()
    try:
        entry = CreateTopicsRequestCreatableTopic(name="x" * 32_760, num_partitions=1, replication_factor=1)
        with FencerClient(process.port) as client:
            answer = client.request(CreateTopicsRequest(topics=(entry, entry)), 4)
        assert [topic.error_code for topic in answer.topics] == [ErrorCode.INVALID_REQUEST] * 2
    finally:
        assert process.stop() == 0, process.stderr()
