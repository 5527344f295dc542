"""SIGTERM with requests in flight: each is answered or its connection closed unanswered, none is
half-applied, the daemon exits 0, and the log reopens cleanly (nothing to truncate)."""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path

import pytest

from controller.log import MetadataLog
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from tests.stress.cluster import Cluster, setup

from .daemon_process import DaemonProcess
from .fencer_client import FencerClient

PAIRS = 6


def _pair_request(cluster: Cluster, pair: int, expand: bool) -> AlterPartitionRequest:
    """One request changing both partitions of a pair: atomic or not at all."""
    parts = []
    for p in (2 * pair, 2 * pair + 1):
        state = cluster.partitions[p]
        replicas = cluster.replicas[p]
        parts.append(
            AlterPartitionRequestPartitionData(
                partition_index=p,
                leader_epoch=state.leader_epoch,
                new_isr=replicas if expand else replicas[:2],
                partition_epoch=state.partition_epoch,
            )
        )
    leader = cluster.partitions[2 * pair].leader
    return AlterPartitionRequest(
        broker_id=leader,
        broker_epoch=cluster.epochs[leader],
        topics=(AlterPartitionRequestTopicData(topic_id=cluster.topic_id, partitions=tuple(parts)),),
    )


def _client(port: int, cluster: Cluster, pair: int, outcome: dict[int, tuple[int, str]]) -> None:
    answered, ending = 0, "stopped"
    try:
        with FencerClient(port, timeout=20) as client:
            expand = False
            while True:
                response = client.request(_pair_request(cluster, pair, expand), 2)
                results = response.topics[0].partitions
                assert all(r.error_code == 0 for r in results), response
                for result in results:
                    state = cluster.partitions[result.partition_index]
                    state.partition_epoch, state.isr = result.partition_epoch, tuple(result.isr)
                answered += 1
                expand = not expand
    except (ConnectionError, OSError) as exc:
        ending = type(exc).__name__
    outcome[pair] = (answered, ending)


def test_sigterm_answers_or_closes_and_never_half_applies(tmp_path: Path) -> None:
    # partition 2k and 2k+1 share a leader: pairs are requested together
    daemon = DaemonProcess(tmp_path / "data", "--session-timeout-ms", "600000").start()
    cluster = setup(daemon.port, 2 * PAIRS, rotation=lambda p: p // 2)
    outcome: dict[int, tuple[int, str]] = {}
    threads = [threading.Thread(target=_client, args=(daemon.port, cluster, pair, outcome)) for pair in range(PAIRS)]
    for thread in threads:
        thread.start()
    time.sleep(0.8)
    started = time.monotonic()
    code = daemon.stop(signal.SIGTERM, timeout=10)
    assert code == 0, daemon.stderr()
    assert time.monotonic() - started < 6, "the daemon took too long to drain"
    for thread in threads:
        thread.join(20)
    assert sum(answered for answered, _ in outcome.values()) > PAIRS, outcome

    log = MetadataLog.open(tmp_path / "data", fsync=False)
    try:
        assert log.recovery.truncated_bytes == 0 and not log.recovery.repaired, log.recovery
        epochs: dict[int, int] = {}
        for entry in log.read():
            record = entry.record
            if type(record).__name__ == "PartitionChangeRecord":
                epochs[record.partition_id] = epochs.get(record.partition_id, 0) + 1  # type: ignore[attr-defined]
    finally:
        log.close()
    for pair in range(PAIRS):
        first, second = epochs.get(2 * pair, 0), epochs.get(2 * pair + 1, 0)
        assert first == second, f"pair {pair}: {first} vs {second} changes: a request was half-applied"
        answered, _ = outcome[pair]
        assert first >= answered, f"pair {pair}: {answered} answered but only {first} in the log"


def test_snapshots_are_taken_under_continuous_load(tmp_path: Path) -> None:
    """The writer pauses its pipeline when a snapshot is due, so load never postpones it."""
    args = ("--session-timeout-ms", "600000", "--snapshot-bytes", "4000")
    daemon = DaemonProcess(tmp_path / "data", *args).start()
    cluster = setup(daemon.port, 2 * PAIRS, rotation=lambda p: p // 2)
    outcome: dict[int, tuple[int, str]] = {}
    threads = [threading.Thread(target=_client, args=(daemon.port, cluster, pair, outcome)) for pair in range(PAIRS)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    assert daemon.stop() == 0, daemon.stderr()
    for thread in threads:
        thread.join(20)
    checkpoints = sorted((tmp_path / "data" / "__cluster_metadata-0").glob("*.checkpoint"))
    assert checkpoints, "no snapshot under load"
    again = DaemonProcess(tmp_path / "data", *args).start()
    assert again.stop() == 0
    started = [line for line in again.stderr().splitlines() if "started:" in line][-1]
    found = re.search(r"(\d+) snapshot \+ (\d+) log records replayed", started)
    assert found is not None and int(found.group(1)) > 0, started


def test_sigterm_during_start_up_stops_cleanly_and_the_next_start_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor that stops a node it has just started (the fleet's quorum does, at the end of a
    run that restarted one) sees exit 0, not death by signal: the daemon is held in formatting's
    fsync of `meta.properties.tmp`, before trio and its signal receiver run, when SIGTERM arrives."""
    marker = tmp_path / "slow"
    marker.touch()
    monkeypatch.setenv("FENCER_SLOW_DISK", str(marker))
    monkeypatch.setenv("FENCER_SLOW_DISK_MATCH", r"meta\.properties\.tmp$")
    monkeypatch.setenv("FENCER_SLOW_DISK_SECONDS", "60")
    data = tmp_path / "data"
    daemon = DaemonProcess(data, module="tests.e2e.slow_disk_daemon")
    daemon.spawn()
    deadline = time.monotonic() + 30
    while not (data / "meta.properties.tmp").exists():
        assert daemon.process is not None and daemon.process.poll() is None, daemon.stderr()
        assert time.monotonic() < deadline, "the daemon never began formatting"
        time.sleep(0.02)
    assert daemon.stop(signal.SIGTERM, timeout=20) == 0, daemon.stderr()
    assert "fencer-controller: SIGTERM before serving: stopped" in daemon.stderr()
    assert not (data / "meta.properties").exists()  # it stopped where it was: nothing formatted
    marker.unlink()
    again = DaemonProcess(data, module="tests.e2e.slow_disk_daemon").start()
    assert again.stop() == 0, again.stderr()
    assert (data / "meta.properties").exists()
