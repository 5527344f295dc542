"""The bound on user operations through the real daemon: a CreateTopics asking for a million or
16,777,217 partitions is answered POLICY_VIOLATION at once, writes nothing, and leaves the next
start-up as it was; `--max-records-per-operation` sets the bound."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from . import kio_messages as m
from .daemon_process import ROOT, DaemonProcess
from .kio_client import KioClient
from .test_daemon import cluster_id, start_broker

POLICY_VIOLATION = 44
INVALID_REPLICATION_FACTOR = 38
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
STARTED = re.compile(r"started: .* (\d+) snapshot \+ (\d+) log records replayed")


def dump_log(data_dir: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "controller", "dump-log", str(data_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def replayed_at_start(daemon: DaemonProcess) -> int:
    """Records the daemon replayed at its (last) start, from its start-up log line."""
    snapshot, log = STARTED.findall(daemon.stderr())[-1]
    return int(snapshot) + int(log)


def test_a_huge_create_topics_is_refused_at_once_and_leaves_nothing_behind(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "data").start()
    try:
        with KioClient(daemon.port, timeout=30) as client:
            first_epoch = start_broker(client, cluster_id(daemon), 1)  # its registration and unfencing: 2 records
            for count in (1_000_000, 16_777_217):
                response = client.request(m.create_topics(7, f"huge-{count}", count, 1))
                assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
                    (f"huge-{count}", POLICY_VIOLATION, TOO_MANY_PARTITIONS)
                ]
            # nothing was written in between: the next registration gets the very next offset
            assert start_broker(client, cluster_id(daemon), 2) == first_epoch + 2
            assert client.request(m.create_topics(7, "small", 3, 1)).topics[0].error_code == 0
    finally:
        assert daemon.stop() == 0, daemon.stderr()
    dumped = dump_log(daemon.data_dir)
    assert dumped.count('"type":"TOPIC_RECORD"') == 1 and dumped.count('"type":"PARTITION_RECORD"') == 3
    records_in_log = dumped.count("| offset:")
    daemon.start()
    try:
        # the next start replays exactly what the log held: the refused requests left no work behind
        assert replayed_at_start(daemon) == records_in_log
    finally:
        assert daemon.stop() == 0, daemon.stderr()


def test_the_flag_sets_the_bound(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "data", "--max-records-per-operation", "5").start()
    try:
        with KioClient(daemon.port) as client:
            start_broker(client, cluster_id(daemon), 1)
            refused = client.request(m.create_topics(7, "six", 6, 1)).topics[0]
            assert (refused.error_code, refused.error_message) == (POLICY_VIOLATION, TOO_MANY_PARTITIONS)
            assert client.request(m.create_topics(7, "four", 4, 1)).topics[0].error_code == 0  # 5 records
    finally:
        assert daemon.stop() == 0, daemon.stderr()


def test_the_topic_default_flags_shape_a_topic_asked_with_minus_one(tmp_path: Path) -> None:
    """Kafka's num.partitions and default.replication.factor: a topic asked with -1 takes them; a
    factor asked explicitly is kept; the default factor above the active brokers is refused."""
    daemon = DaemonProcess(tmp_path / "data", "--num-partitions", "3", "--default-replication-factor", "2").start()
    try:
        with KioClient(daemon.port) as client:
            start_broker(client, cluster_id(daemon), 1)
            alone = client.request(m.create_topics(7, "alone", -1, -1)).topics[0]
            assert alone.error_code == INVALID_REPLICATION_FACTOR, alone
            start_broker(client, cluster_id(daemon), 2)
            defaulted = client.request(m.create_topics(7, "defaulted", -1, -1)).topics[0]
            assert (defaulted.error_code, defaulted.num_partitions, defaulted.replication_factor) == (0, 3, 2)
            asked = client.request(m.create_topics(7, "asked", 2, 1)).topics[0]
            assert (asked.error_code, asked.num_partitions, asked.replication_factor) == (0, 2, 1)
    finally:
        assert daemon.stop() == 0, daemon.stderr()


def test_a_bound_that_is_not_a_positive_integer_exits_2() -> None:
    for flag in ("--max-records-per-operation", "--num-partitions", "--default-replication-factor"):
        for value in ("0", "-1", "many"):
            result = subprocess.run(
                [sys.executable, "-m", "controller", "--data-dir", "x", flag, value],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
