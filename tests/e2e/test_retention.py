"""Retention through the real daemon: small snapshots, segments and retention, a few thousand ISR
changes; the data dir stays bounded and a restart has every acknowledged change.

The bound, derived (N = --metadata-retention-bytes, B = --snapshot-bytes):
- After each retention pass the segments and snapshots take at most N, or only the newest
  snapshot is left (then at most one snapshot and the segments from its end on, far below N here).
- Until the next pass the log grows by what was appended since the newest snapshot's end: the
  daemon snapshots once that reaches B, so it is at most B - 1 plus the batch that crossed it
  (one request: this client waits for each answer before it sends the next).
- The next snapshot adds its own file before its retention pass (whole, or as a `.part`).
So the data dir never holds more than N + B + the largest batch + the largest snapshot + its
meta.properties. Snapshots: consecutive ones are at least B of log apart and that log is still on
disk (segments go only below the oldest snapshot kept), so at most N // B + 1 survive a pass; one
more may wait for its pass. Sizes are sampled between requests, when no append is in progress.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.log.segments import PARTITION_DIR, list_segments, scan_segment
from controller.log.snapshots import list_snapshots
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from tests.stress.cluster import Acked, Cluster, check_recovered, fetch_state, setup

from .daemon_process import ROOT, DaemonProcess, free_port
from .fencer_client import FencerClient

SNAPSHOT_BYTES = 32768
SEGMENT_BYTES = 16384
RETENTION_BYTES = 200_000
CHANGES = 4000  # about 100 bytes of log each: twice the retention
PARTITIONS = 12
SAMPLE_EVERY = 100


def alter_isr(client: FencerClient, cluster: Cluster, partition: int) -> None:
    """Shrink a full ISR to two replicas or expand it back; note the acknowledged result."""
    state = cluster.partitions[partition]
    replicas = cluster.replicas[partition]
    data = AlterPartitionRequestPartitionData(
        partition_index=partition,
        leader_epoch=state.leader_epoch,
        new_isr=replicas[:2] if len(state.isr) == 3 else replicas,
        partition_epoch=state.partition_epoch,
    )
    request = AlterPartitionRequest(
        broker_id=state.leader,
        broker_epoch=cluster.epochs[state.leader],
        topics=(AlterPartitionRequestTopicData(topic_id=cluster.topic_id, partitions=(data,)),),
    )
    result = client.request(request, 2).topics[0].partitions[0]
    assert result.error_code == 0, f"partition {partition}: error {result.error_code}"
    cluster.partitions[partition] = Acked(state.leader, result.leader_epoch, result.partition_epoch, tuple(result.isr))


def data_dir_files(data_dir: Path) -> dict[str, int]:
    return {str(path.relative_to(data_dir)): path.stat().st_size for path in data_dir.rglob("*") if path.is_file()}


def test_retention_keeps_the_data_dir_bounded_and_a_restart_has_every_acknowledged_change(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    metrics_port = free_port()
    args = (
        *("--snapshot-bytes", str(SNAPSHOT_BYTES), "--segment-bytes", str(SEGMENT_BYTES)),
        *("--metadata-retention-bytes", str(RETENTION_BYTES), "--session-timeout-ms", "600000"),
        *("--metrics-listen", f"127.0.0.1:{metrics_port}"),
    )
    daemon = DaemonProcess(data_dir, *args).start()
    samples: list[dict[str, int]] = []
    try:
        cluster = setup(daemon.port, PARTITIONS)
        with FencerClient(daemon.port, timeout=30) as client:
            for change in range(CHANGES):
                alter_isr(client, cluster, change % PARTITIONS)
                if change % SAMPLE_EVERY == SAMPLE_EVERY - 1:
                    samples.append(data_dir_files(data_dir))
    finally:
        daemon.kill()  # every request was answered: nothing is in flight
    partition = data_dir / PARTITION_DIR
    segments, snapshots = list_segments(partition), list_snapshots(partition)
    assert segments[0][0] > 0 and len(snapshots) >= 2  # retention did delete segments and snapshots

    largest_batch = max(batch.size for _, path in segments for batch in scan_segment(path))
    largest_snapshot = max(size for sample in samples for name, size in sample.items() if ".checkpoint" in name)
    meta = (data_dir / "meta.properties").stat().st_size
    bound = RETENTION_BYTES + SNAPSHOT_BYTES + largest_batch + largest_snapshot + meta
    totals = [sum(sample.values()) for sample in samples]
    assert max(totals) <= bound, (totals, bound)
    most_snapshots = RETENTION_BYTES // SNAPSHOT_BYTES + 2
    counts = [sum(1 for name in sample if name.endswith(".checkpoint")) for sample in samples]
    assert max(counts) <= most_snapshots, counts

    daemon = DaemonProcess(data_dir, *args).start()
    try:
        check_recovered(cluster, fetch_state(metrics_port))  # exactly the acknowledged state: none in flight
    finally:
        daemon.stop()


@pytest.mark.parametrize("flag", ["--segment-bytes", "--metadata-retention-bytes"])
@pytest.mark.parametrize("value", ["0", "-1", "1e9"])
def test_bad_sizes_exit_2_with_one_line(flag: str, value: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "controller", "--data-dir", "x", flag, value],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"python -m controller: error: argument {flag}: expected a positive integer, got {value!r}"
    ]
