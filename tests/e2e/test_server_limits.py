"""The daemon at the edge of its resources: a connection cap, and a process out of descriptors.

With `--max-connections N`, the N+1-th connection is closed at once and counted; one closing
makes room again. Out of descriptors (a hard RLIMIT_NOFILE the daemon cannot raise, and idle
connections that exhaust it), accepting fails with EMFILE and is retried quietly (a few log
lines, not a traceback every 100 ms), a snapshot that cannot open its file fails, is logged
and counted and retried later, and the daemon goes on answering its existing connections.
"""

from __future__ import annotations

import re
import resource
import socket
import time
import urllib.request
import uuid
from pathlib import Path

from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.describe_cluster import DescribeClusterRequest

from .daemon_process import DaemonProcess, free_port
from .fencer_client import FencerClient

PARTITION = "__cluster_metadata-0"


def metric(port: int, name: str, **labels: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    pattern = "^" + re.escape(name) + (r"\{" + re.escape(wanted) + r"\}" if labels else "") + r" (\S+)$"
    match = re.search(pattern, text, re.M)
    assert match is not None, f"{name} {labels} not in /metrics"
    return float(match.group(1))


def answered(port: int) -> bool:
    with FencerClient(port, timeout=10) as client:
        request = ApiVersionsRequest(client_software_name="fencer-test", client_software_version="1")
        return client.request(request, 3).error_code == 0


def test_connections_past_the_limit_are_closed_at_once_and_counted(tmp_path: Path) -> None:
    metrics_port = free_port()
    daemon = DaemonProcess(
        tmp_path / "data", "--max-connections", "3", "--metrics-listen", f"127.0.0.1:{metrics_port}"
    ).start()
    try:
        held = [FencerClient(daemon.port, timeout=10) for _ in range(3)]
        for client in held:
            assert client.request(ApiVersionsRequest(), 0).error_code == 0
        assert metric(metrics_port, "fencer_open_connections") == 3
        assert metric(metrics_port, "fencer_queued_request_bytes") == 0  # every request answered, memory released
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as extra:
            assert extra.recv(1) == b""  # closed by the daemon without a word
        assert metric(metrics_port, "fencer_connections_refused_total", reason="max_connections") == 1
        held.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the closed one is gone once its handler ends
            try:
                assert answered(daemon.port)
                break
            except (ConnectionError, OSError):
                assert time.monotonic() < deadline, daemon.stderr()
                time.sleep(0.05)
        for client in held:
            client.close()
    finally:
        assert daemon.stop() == 0


def _low_descriptor_limit(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def registration(client: FencerClient) -> BrokerRegistrationRequest:
    """A broker's registration; sent again, the same incarnation writes its record again (~100 bytes)."""
    cluster_id = client.request(DescribeClusterRequest(), 1).cluster_id
    listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1)
    return BrokerRegistrationRequest(
        broker_id=1, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=1), listeners=(listener,)
    )


def test_out_of_descriptors_the_daemon_keeps_serving_and_retries_its_snapshot(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    metrics_port = free_port()
    daemon = DaemonProcess(
        data_dir,
        "--max-connections",
        "1000",  # above what the descriptor limit allows, as an operator might set it
        "--snapshot-bytes",
        "2048",
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        preexec_fn=lambda: _low_descriptor_limit(96),
    ).start()
    flood: list[socket.socket] = []
    try:
        with FencerClient(daemon.port, timeout=20) as client:
            register = registration(client)
            for _ in range(150):  # more than the daemon can hold: the rest wait in the backlog
                flood.append(socket.create_connection(("127.0.0.1", daemon.port), timeout=10))
            time.sleep(1.0)  # accept now fails with EMFILE, again and again
            for _ in range(100):  # the log grows past --snapshot-bytes: a snapshot is attempted and fails
                assert client.request(register, 3).error_code == 0
            stderr = daemon.stderr()
            assert "snapshot failed" in stderr, stderr
            assert not list((data_dir / PARTITION).glob("*.checkpoint"))
            assert 1 <= stderr.count("cannot accept connections") <= 2, stderr
            assert "Traceback" not in stderr
            for sock in flood:
                sock.close()
            flood.clear()
            time.sleep(1.0)  # the daemon accepts the backlog, sees each peer gone, closes them
            assert metric(metrics_port, "fencer_snapshots_total", outcome="failed") >= 1
            assert metric(metrics_port, "fencer_connections_refused_total", reason="descriptors") >= 1
            deadline = time.monotonic() + 30
            while not list((data_dir / PARTITION).glob("*.checkpoint")):  # retried after its delay
                assert time.monotonic() < deadline, daemon.stderr()
                assert client.request(register, 3).error_code == 0
                time.sleep(0.2)
    finally:
        for sock in flood:
            sock.close()
        assert daemon.stop() == 0, daemon.stderr()
