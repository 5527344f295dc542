"""SIGTERM while the disk is busy: what was read is answered, every commit and snapshot in progress
finishes before the log closes, and a capture that cannot be written never makes the exit fail.

The daemon runs through `tests.e2e.slow_disk_daemon`: once the test creates a marker file, each
fsync of a log segment or snapshot part sleeps two seconds first. A test waits until the write
before such an fsync is visible on disk (the segment or the `.part` file grew), then sends
SIGTERM: the commit or snapshot is then certainly in progress.
"""

from __future__ import annotations

import shutil
import signal
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from controller.log import MetadataLog
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.messages.describe_cluster import DescribeClusterRequest

from .daemon_process import DaemonProcess
from .fencer_client import FencerClient

PARTITION = "__cluster_metadata-0"


@pytest.fixture
def slow_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    marker = tmp_path / "slow"
    monkeypatch.setenv("FENCER_SLOW_DISK", str(marker))
    return marker


def slow_daemon(data_dir: Path, *args: str) -> DaemonProcess:
    return DaemonProcess(data_dir, *args, module="tests.e2e.slow_disk_daemon").start()


def log_bytes(data_dir: Path) -> int:
    return sum(path.stat().st_size for path in (data_dir / PARTITION).glob("*.log"))


def wait_for(condition: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def register(client: FencerClient, brokers: range) -> dict[int, int]:
    cluster_id = client.request(DescribeClusterRequest(), 1).cluster_id
    epochs = {}
    for broker in brokers:
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1)
        request = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.uuid4(), listeners=(listener,)
        )
        epochs[broker] = client.request(request, 3).broker_epoch
        heartbeat = BrokerHeartbeatRequest(
            broker_id=broker, broker_epoch=epochs[broker], current_metadata_offset=1 << 40
        )
        assert not client.request(heartbeat, 1).is_fenced
    return epochs


def create(client: FencerClient, name: str, partitions: int) -> Any:
    topic = CreateTopicsRequestCreatableTopic(name=name, num_partitions=partitions, replication_factor=3)
    return client.request(CreateTopicsRequest(topics=(topic,)), 7).topics[0]


def commit_in_progress(client: FencerClient, data_dir: Path, slow_disk: Path, answer: list[Any]) -> threading.Thread:
    """Send a CreateTopics on a slow disk; return once its commit has written and sleeps in its fsync."""
    register(client, range(1, 4))
    slow_disk.touch()
    size = log_bytes(data_dir)
    sender = threading.Thread(target=lambda: answer.append(create(client, "late", 500)))
    sender.start()
    wait_for(lambda: log_bytes(data_dir) > size, "the commit's write")
    return sender


def test_a_request_being_committed_at_sigterm_is_answered(tmp_path: Path, slow_disk: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = slow_daemon(data_dir)
    answer: list[Any] = []
    with FencerClient(daemon.port, timeout=30) as client:
        sender = commit_in_progress(client, data_dir, slow_disk, answer)
        code = daemon.stop(timeout=30)  # SIGTERM while its fsync sleeps
        sender.join(30)
    assert code == 0, daemon.stderr()
    assert answer and answer[0].error_code == 0, daemon.stderr()
    with MetadataLog.open(data_dir) as log:
        assert log.recovery.truncated_bytes == 0


def test_a_fencing_commit_in_flight_at_sigterm_finishes_before_the_log_closes(tmp_path: Path, slow_disk: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = slow_daemon(data_dir, "--session-timeout-ms", "1000")
    with FencerClient(daemon.port, timeout=30) as client:
        register(client, range(1, 4))
        assert create(client, "orders", 300).error_code == 0
        size = log_bytes(data_dir)
        slow_disk.touch()  # no more heartbeats: the session timer fences the brokers, slowly
        wait_for(lambda: log_bytes(data_dir) > size, "the fencing commit's write")
        code = daemon.stop(timeout=30)
    assert code == 0, daemon.stderr()
    assert "Traceback" not in daemon.stderr()
    with MetadataLog.open(data_dir) as log:
        assert log.recovery.truncated_bytes == 0
        assert log.next_offset > 0
        fenced = [e.record for e in log.read(0) if type(e.record).__name__ == "BrokerRegistrationChangeRecord"]
    assert any(record.fenced == 1 for record in fenced)


def test_a_snapshot_being_written_at_sigterm_is_completed(
    tmp_path: Path, slow_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the snapshot's fsync is slow: the topics that fill the log commit at the disk's speed, so
    the loop checks for the snapshot's part between requests of milliseconds (with every commit slow
    too, each check came seconds apart and could miss a snapshot's window again and again: once
    145 s on a loaded machine)."""
    monkeypatch.setenv("FENCER_SLOW_DISK_MATCH", r"/__cluster_metadata-0/.*\.checkpoint\.part$")
    data_dir = tmp_path / "data"
    daemon = slow_daemon(data_dir, "--snapshot-bytes", "4096", "--session-timeout-ms", "600000")
    partition = data_dir / PARTITION
    with FencerClient(daemon.port, timeout=30) as client:
        register(client, range(1, 4))
        slow_disk.touch()
        index = 0
        while not list(partition.glob("*.checkpoint.part")):  # topics until a snapshot starts
            assert create(client, f"t{index}", 5).error_code == 0
            index += 1
        code = daemon.stop(timeout=30)
    assert code == 0, daemon.stderr()
    assert not list(partition.glob("*.part"))
    assert list(partition.glob("*.checkpoint"))
    restarted = DaemonProcess(data_dir).start()
    try:
        assert "skipped invalid snapshot" not in restarted.stderr()
    finally:
        assert restarted.stop() == 0


def test_a_capture_that_cannot_be_written_at_shutdown_is_logged_and_the_exit_is_clean(tmp_path: Path) -> None:
    data_dir, capture = tmp_path / "data", tmp_path / "capture"
    daemon = DaemonProcess(data_dir, "--capture-dir", str(capture)).start()
    with FencerClient(daemon.port) as client:
        register(client, range(1, 4))
    shutil.rmtree(capture)  # the capture disk is gone: the last part cannot be written
    code = daemon.stop()
    stderr = daemon.stderr()
    assert code == 0, stderr
    assert "capture" in stderr and "could not be written" in stderr
    assert "Traceback" not in stderr
    with MetadataLog.open(data_dir) as log:
        assert log.recovery.truncated_bytes == 0


def test_shutdown_stops_accepting_at_once_and_a_second_signal_waits_too(
    tmp_path: Path, slow_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FENCER_SLOW_DISK_SECONDS", "6")  # room for both signals, even on a loaded machine
    data_dir = tmp_path / "data"
    daemon = slow_daemon(data_dir)
    answer: list[Any] = []
    with FencerClient(daemon.port, timeout=30) as client:
        sender = commit_in_progress(client, data_dir, slow_disk, answer)
        assert daemon.process is not None
        daemon.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # draining: the commit's fsync still sleeps, the listener is closed
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", daemon.port), timeout=5).close()
        daemon.process.send_signal(signal.SIGTERM)  # while the commit still sleeps: ignored
        sender.join(30)
        assert daemon.process.wait(30) == 0
    assert answer and answer[0].error_code == 0
    assert "already stopping" in daemon.stderr()
    daemon.stop()
