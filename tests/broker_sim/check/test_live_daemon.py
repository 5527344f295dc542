"""End to end: the real daemon (a subprocess, real sockets) under ISR churn, with small segments,
snapshots and retention; the checker reads its data dir while it runs and after it stopped, with
the journal of what it acknowledged, and finds nothing wrong."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from pathlib import Path

from broker_sim.check import check
from broker_sim.journal import Entry, JournalWriter, PartitionAcked, Registered, TopicCreated
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from tests.e2e.daemon_process import ROOT, DaemonProcess
from tests.e2e.fencer_client import FencerClient
from tests.stress.cluster import Acked, Cluster, setup
from tests.stress.model import DATA_BROKERS

PARTITIONS = 6
CHANGES = 1200
DAEMON_ARGS = (
    *("--snapshot-bytes", "16384", "--segment-bytes", "8192", "--metadata-retention-bytes", "80000"),
    *("--session-timeout-ms", "600000"),
)


def churn(port: int, cluster: Cluster, journal: list[Entry], done: threading.Event) -> None:
    """Shrink every ISR to two replicas and expand it back, noting each acknowledgement."""
    try:
        with FencerClient(port, timeout=30) as client:
            for change in range(CHANGES):
                partition = change % PARTITIONS
                state, replicas = cluster.partitions[partition], cluster.replicas[partition]
                isr = replicas[:2] if len(state.isr) == 3 else replicas
                data = AlterPartitionRequestPartitionData(
                    partition_index=partition,
                    leader_epoch=state.leader_epoch,
                    new_isr=isr,
                    partition_epoch=state.partition_epoch,
                )
                request = AlterPartitionRequest(
                    broker_id=state.leader,
                    broker_epoch=cluster.epochs[state.leader],
                    topics=(AlterPartitionRequestTopicData(topic_id=cluster.topic_id, partitions=(data,)),),
                )
                answer = client.request(request, 2).topics[0].partitions[0]
                assert answer.error_code == 0, answer
                acked = Acked(state.leader, answer.leader_epoch, answer.partition_epoch, tuple(answer.isr))
                cluster.partitions[partition] = acked
                journal.append(
                    PartitionAcked(
                        0, state.leader, cluster.epochs[state.leader], 2, str(cluster.topic_id), partition,
                        list(isr), [], answer.leader_id, answer.leader_epoch, answer.partition_epoch, list(answer.isr),
                    )
                )  # fmt: skip
    finally:
        done.set()


def test_the_live_daemon_log_checks_clean_while_running_and_after(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = DaemonProcess(data_dir, *DAEMON_ARGS).start()
    journal: list[Entry] = []
    try:
        cluster = setup(daemon.port, PARTITIONS)
        journal.extend(Registered(0, b, str(uuid.UUID(int=b)), cluster.epochs[b]) for b in DATA_BROKERS)
        journal.append(TopicCreated(0, "stress", str(cluster.topic_id), PARTITIONS, 3))
        done = threading.Event()
        driver = threading.Thread(target=churn, args=(daemon.port, cluster, journal, done))
        driver.start()
        live_checks = 0
        while not done.is_set() or live_checks == 0:
            result = check(data_dir, list(journal))  # the controller appends and snapshots meanwhile
            assert result.violations == [] and result.problems == [], [
                v.line() for v in result.violations
            ] + result.problems
            live_checks += 1
        driver.join()
        with FencerClient(daemon.port) as client:
            shutdown = ControlledShutdownRequest(broker_id=3, broker_epoch=cluster.epochs[3])
            assert client.request(shutdown, 3).error_code == 0
    finally:
        daemon.stop()
    acks = sum(isinstance(entry, PartitionAcked) for entry in journal)
    assert acks == CHANGES
    result = check(data_dir, journal)
    assert result.ok, [v.line() for v in result.violations] + result.problems
    assert result.start_offset > 0  # retention deleted the oldest segments: replay began at a snapshot
    assert result.counts["journal_partition_acked"] + result.unverifiable.get("partition_acked", 0) == acks
    assert result.counts["journal_partition_acked"] > 0 and result.counts["snapshots_compared"] >= 1

    path = tmp_path / "journal.jsonl"
    writer = JournalWriter(path)
    writer.write_all(journal)
    writer.close()
    cli = subprocess.run(
        [sys.executable, "-m", "broker_sim", "check", str(data_dir), "--journal", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
