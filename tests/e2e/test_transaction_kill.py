"""SIGKILL between a metadata transaction's Begin and its End.

The real daemon runs with operations limited to 2 records a batch (`--max-records-per-operation
2`: its topics are created one per request), so a controlled shutdown of a broker leading 8
partitions is one transaction of several batches, each committed as it comes. It runs under
strace, which delays every fsync by 0.3 s (`inject=fsync:delay_exit`): the transaction reaches
the disk a batch at a time, slowly enough to see it half written. As soon as the segment holds
the Begin and no End, the daemon is killed with SIGKILL. The restart must not apply any of the
transaction (broker 1 is not in controlled shutdown, every partition keeps its leader, ISR and
epochs), must close it with an AbortTransactionRecord ("Controller failover") after its
LeaderChange, and the checker must agree. strace is required (.ci/run installs it): a missing
strace fails, never skips.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

from broker_sim.check import check
from controller.log import MetadataLog
from controller.log.reading import segment_batches
from controller.log.segments import PARTITION_DIR, list_segments
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
)
from protocol.records.metadata import AbortTransactionRecord, BeginTransactionRecord, EndTransactionRecord
from protocol.records.metadata_value import decode_metadata_value
from tests.stress.cluster import fetch_state
from tests.stress.load import register_data_brokers

from .daemon_process import DaemonProcess, free_port
from .fencer_client import FencerClient

TOPICS = 8  # one partition each, replicas 1, 2, 3: broker 1 leads them all
FSYNC_DELAY_US = 300_000


def markers_on_disk(data_dir: Path) -> list[str]:
    """The transaction markers in the segments now, in order (data batches only)."""
    found = []
    for _, path in list_segments(data_dir / PARTITION_DIR):
        for _, _, batch in segment_batches(path):
            if batch.is_control:
                continue
            for record in batch.records:
                kind = type(decode_metadata_value(record.value)[0])
                if kind in (BeginTransactionRecord, EndTransactionRecord, AbortTransactionRecord):
                    found.append(kind.__name__)
    return found


def create_topics(port: int) -> None:
    with FencerClient(port) as client:
        for index in range(TOPICS):
            assignment = CreateTopicsRequestCreatableReplicaAssignment(partition_index=0, broker_ids=(1, 2, 3))
            topic = CreateTopicsRequestCreatableTopic(
                name=f"t{index}", num_partitions=-1, replication_factor=-1, assignments=(assignment,)
            )
            result = client.request(CreateTopicsRequest(topics=(topic,)), 7).topics[0]
            assert result.error_code == 0, result


def tracee_pid(strace: DaemonProcess) -> int:
    assert strace.process is not None
    pid = strace.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert children, "strace has not started the daemon"
    return int(children[0])


def shutdown_without_answer(port: int, epoch: int, answered: list[object]) -> None:
    """Send a ControlledShutdown of broker 1; note the answer if one ever comes."""
    try:
        with FencerClient(port) as client:
            answered.append(client.request(ControlledShutdownRequest(broker_id=1, broker_epoch=epoch), 3))
    except (OSError, EOFError, ConnectionError, AssertionError):
        pass


def test_sigkill_between_begin_and_end_applies_nothing_after_restart(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    assert strace is not None, "strace is not on PATH: install it (apt-get install strace); .ci/run does"
    data_dir = tmp_path / "data"
    metrics = free_port()
    args = ("--max-records-per-operation", "2", "--metrics-listen", f"127.0.0.1:{metrics}")
    args += ("--session-timeout-ms", "600000")
    wrapper = (strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e")
    wrapper += (f"inject=fsync:delay_exit={FSYNC_DELAY_US}",)
    daemon = DaemonProcess(data_dir, *args, wrapper=wrapper).start(timeout=60)
    try:
        _, epochs = register_data_brokers(daemon.port)
        create_topics(daemon.port)
        before = fetch_state(metrics)
        answered: list[object] = []
        sender = threading.Thread(target=shutdown_without_answer, args=(daemon.port, epochs[1], answered), daemon=True)
        sender.start()
        deadline = time.monotonic() + 30
        markers: list[str] = []
        while time.monotonic() < deadline:
            markers = markers_on_disk(data_dir)
            if markers[-1:] == ["BeginTransactionRecord"]:
                break
            assert "EndTransactionRecord" not in markers, "the transaction ended before it was seen open"
            time.sleep(0.005)
        assert markers[-1:] == ["BeginTransactionRecord"], f"no open transaction seen on disk: {markers}"
        os.kill(tracee_pid(daemon), signal.SIGKILL)
        daemon.process.wait(30)  # type: ignore[union-attr]
        sender.join(10)
        assert answered == [], "the shutdown was answered before its transaction was durable"
    finally:
        if daemon.process is not None and daemon.process.poll() is None:
            os.kill(tracee_pid(daemon), signal.SIGKILL)  # strace ends with its tracee
        daemon.stop()
    assert markers_on_disk(data_dir) == ["BeginTransactionRecord"]

    restarted = DaemonProcess(data_dir, "--metrics-listen", f"127.0.0.1:{metrics}").start(timeout=60)
    try:
        after = fetch_state(metrics)
        stderr = restarted.stderr()
    finally:
        restarted.stop()
    assert "was left open by the previous controller: aborted" in stderr
    assert after["topics"] == before["topics"]  # not one partition change of the cut shutdown
    brokers_before = {b["id"]: b for b in before["brokers"]}  # type: ignore[attr-defined]
    brokers_after = {b["id"]: b for b in after["brokers"]}  # type: ignore[attr-defined]
    assert brokers_after == brokers_before  # broker 1's InControlledShutdown flag was in it too
    assert markers_on_disk(data_dir) == ["BeginTransactionRecord", "AbortTransactionRecord"]
    with MetadataLog.open(data_dir, fsync=False) as log:
        abort = next(e for e in log.read(0) if isinstance(e.record, AbortTransactionRecord))
        previous = [e for e in log.read(0) if e.offset == abort.offset - 1]
    assert abort.record.reason == "Controller failover"
    assert type(previous[0].record).__name__ == "LeaderChangeMessage"
    result = check(data_dir)
    assert result.ok, result.violations
    assert result.notes == []
    with socket.socket() as probe:  # the daemon is gone: nothing listens on its port any more
        assert probe.connect_ex(("127.0.0.1", restarted.port)) != 0
