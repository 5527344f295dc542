"""Quorum RPCs no peer could truly send, against the daemon as users run it: answered or refused,
and the node serves on with its epoch, leader and log as they were.

The single node is started as the README's Quick start starts it (no quorum flags, no
authorizer). Each frame here once stopped it or changed it while refusing: BeginQuorumEpoch and
EndQuorumEpoch naming the node itself as leader of a later epoch, Votes past the last epoch or
from the node itself, a FetchSnapshot outside the snapshot's bytes, a Fetch inside the batch
being written.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.raft import messages as rm
from controller.raft import wire_requests
from controller.raft.ids import Epoch, NodeId, OffsetAndEpoch
from protocol.error_codes import ErrorCode
from tests.stress.cluster import setup

from . import kio_messages as km
from .daemon_process import DaemonProcess, free_port
from .fencer_client import FencerClient
from .kio_client import KioClient

INT32_MAX = 2**31 - 1


def state(metrics_port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/state", timeout=10) as answer:
        return dict(json.loads(answer.read()))


def quorum_view(metrics_port: int) -> tuple[object, ...]:
    view = state(metrics_port)["quorum"]
    return (view["epoch"], view["leader_id"], view["voted_id"], view["state"], view["log_end_offset"])


def ask(port: int, request: rm.Request, version: int) -> Any:
    """The daemon's answer to one quorum RPC (the core's message on the wire at `version`)."""
    body = wire_requests.request_to_wire(request, version)
    with FencerClient(port) as client:
        return client.request(body, version)


def partition_error(answer: Any) -> int:
    if answer.error_code:
        return int(answer.error_code)
    topics = getattr(answer, "topics", None) or getattr(answer, "responses", ())
    return int(topics[0].partitions[0].error_code)


def newest_snapshot(port: int, epoch: Epoch) -> OffsetAndEpoch:
    """The snapshot a Fetch from offset 0 names (the node's newest), waited for up to 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        answer = ask(port, rm.FetchRequest(None, NodeId(5), epoch, 0, Epoch(0)), 17)
        found = answer.responses[0].partitions[0].snapshot_id
        if found.end_offset >= 0:
            return OffsetAndEpoch(found.end_offset, Epoch(found.epoch))
        time.sleep(0.1)
    raise AssertionError("no snapshot was written")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProcess, int]]:
    root = tmp_path_factory.mktemp("raft-refusals")
    metrics = free_port()
    daemon = DaemonProcess(root / "data", "--metrics-listen", f"127.0.0.1:{metrics}").start()
    yield daemon, metrics
    daemon.stop()


def test_a_self_claim_of_a_later_epochs_leadership_is_refused_and_the_node_serves_on(
    node: tuple[DaemonProcess, int],
) -> None:
    daemon, metrics = node
    before = quorum_view(metrics)
    epoch = int(before[0])
    for claimed in (epoch + 1, epoch + 1000, INT32_MAX):
        for version in (0, 1):
            begin = rm.BeginQuorumEpochRequest(None, NodeId(1), Epoch(claimed), NodeId(1 if version else -1))
            assert partition_error(ask(daemon.port, begin, version)) == ErrorCode.INVALID_REQUEST
            end = rm.EndQuorumEpochRequest(None, NodeId(1), Epoch(claimed), ())
            assert partition_error(ask(daemon.port, end, version)) == ErrorCode.INVALID_REQUEST
    assert daemon.process is not None and daemon.process.poll() is None
    assert quorum_view(metrics) == before
    setup(daemon.port, 1)  # it still registers brokers and creates a topic: it serves on
    assert "Traceback" not in daemon.stderr()


def test_votes_past_the_last_epoch_or_from_the_node_itself_change_nothing(node: tuple[DaemonProcess, int]) -> None:
    daemon, metrics = node
    before = quorum_view(metrics)
    epoch = int(before[0])
    for version in (0, 1, 2):
        for candidate, candidate_epoch in ((1, INT32_MAX), (1, epoch + 1), (2, INT32_MAX), (7, epoch + 1)):
            vote = rm.VoteRequest(None, Epoch(candidate_epoch), NodeId(candidate), NodeId(1), Epoch(0), 0, version == 2)
            error = partition_error(ask(daemon.port, vote, version))
            assert error in (ErrorCode.INVALID_REQUEST, ErrorCode.INCONSISTENT_VOTER_SET), (version, candidate)
    assert quorum_view(metrics) == before


def test_a_snapshot_read_outside_its_bytes_is_out_of_range(tmp_path: Path) -> None:
    metrics = free_port()
    daemon = DaemonProcess(
        tmp_path / "data", "--metrics-listen", f"127.0.0.1:{metrics}", "--snapshot-bytes", "2048"
    ).start()
    try:
        setup(daemon.port, 40)  # enough records for a snapshot
        epoch = Epoch(int(quorum_view(metrics)[0]))
        # The brokers setup registered stop heartbeating, their sessions expire and the fences can
        # make the node write a newer snapshot and delete the one named here: a read of a deleted
        # snapshot is SNAPSHOT_NOT_FOUND (as Kafka answers it) and the checks start again on the
        # newest one.
        for _attempt in range(5):
            snapshot = newest_snapshot(daemon.port, epoch)
            answers = [
                (
                    expected,
                    ask(daemon.port, rm.FetchSnapshotRequest(None, NodeId(5), epoch, snapshot, position), version),
                )
                for version in (0, 1)
                for position, expected in (
                    (-1, ErrorCode.POSITION_OUT_OF_RANGE),
                    (1 << 40, ErrorCode.POSITION_OUT_OF_RANGE),
                    (0, ErrorCode.NONE),
                )
            ]
            if all(partition_error(answer) != ErrorCode.SNAPSHOT_NOT_FOUND for _, answer in answers):
                break
        assert [partition_error(answer) for _, answer in answers] == [expected for expected, _ in answers]
        for expected, answer in answers:  # the reads from position 0, at each version, carry bytes
            assert expected != ErrorCode.NONE or answer.topics[0].partitions[0].unaligned_records
        assert daemon.process is not None and daemon.process.poll() is None
    finally:
        daemon.stop()
    assert "Traceback" not in daemon.stderr()


def test_a_fetch_inside_the_batch_being_written_is_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The core's log end passes the disk's while the writer writes a batch: a Fetch from there
    (max wait 0) is answered, without records, rather than stopping the node."""
    marker = tmp_path / "slow"
    monkeypatch.setenv("FENCER_SLOW_DISK", str(marker))
    monkeypatch.setenv("FENCER_SLOW_DISK_SECONDS", "1.5")
    metrics = free_port()
    daemon = DaemonProcess(
        tmp_path / "data", "--metrics-listen", f"127.0.0.1:{metrics}", module="tests.e2e.slow_disk_daemon"
    ).start()
    try:
        setup(daemon.port, 1)
        epoch = Epoch(int(quorum_view(metrics)[0]))
        end = int(quorum_view(metrics)[4])
        marker.touch()
        writing = threading.Thread(target=another_topic, args=(daemon.port,), daemon=True)
        writing.start()
        time.sleep(0.5)  # the batch's offsets are the core's; its bytes are not on disk yet
        for offset in (end, end + 1, end + 2):
            answer = ask(daemon.port, rm.FetchRequest(None, NodeId(-1), epoch, offset, epoch, -1, 0), 17)
            assert answer.error_code == ErrorCode.NONE and answer.responses[0].partitions[0].error_code == 0
        marker.unlink()
        writing.join(10)
        assert daemon.process is not None and daemon.process.poll() is None
    finally:
        marker.unlink(missing_ok=True)
        daemon.stop()
    assert "Traceback" not in daemon.stderr()


def another_topic(port: int) -> None:
    """A topic of 20 partitions: one batch of records, written while the disk is slow."""
    with KioClient(port, timeout=30) as client:
        client.request(km.create_topics(7, "another", 20, 3))
