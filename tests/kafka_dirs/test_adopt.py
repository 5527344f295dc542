"""fencer adopts a data dir in Kafka's shape, in the suite.

`tests/kafka_dirs/adopt.py` is the acceptance check (`make check-kafka-dirs KAFKA_DIRS=...`), run
by hand on data dirs real Kafka brokers wrote (they are not in the repository;
test_kafka_written_dirs.py runs it on those in ../shared/fixtures/kafka). Here it runs, as
the Makefile runs it, on the dir `kafka_dir.py` writes from hand-written record bytes: three
brokers, two topics, a snapshot, two controller epochs, controlled shutdowns, and a broker left
unfenced (so its new incarnation meets DUPLICATE_BROKER_REGISTRATION until its session expires).
The hand-written bytes and their batch encoder are held to fencer's decoder first, and their
replay to the cluster worked out by hand, so that a mistake there is not taken for fencer's.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from protocol.records.batch import decode_batch
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, decode_control_record
from protocol.records.metadata import (
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
    RegisterControllerRecord,
    ZkMigrationStateRecord,
)
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value
from tests.e2e.daemon_process import ROOT

from . import adopt, kafka_dir
from .kafka_dir import EXPECTED_BROKERS, EXPECTED_PARTITIONS, EXPECTED_TOPICS, LOG, write_kafka_dir

SESSION_TIMEOUT_MS = 5000  # the broker the log left unfenced waits this long; /state is read well before


def test_hand_written_batches_decode_with_fencers_decoder() -> None:
    """The bootstrap transaction batch and the first registrations, framed by the test's encoder,
    read back by fencer's decoder (CRC-32C, header, varint records) as Kafka's schemas say."""
    leader_change, bootstrap, registrations = (kafka_dir.encode([b]) for b in LOG[:3])
    batch, size = decode_batch(bootstrap)
    assert size == len(bootstrap)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.last_offset_delta) == (1, 1, 3)
    assert (batch.is_control, batch.is_transactional, batch.compression) == (False, False, 0)
    assert batch.base_timestamp == batch.max_timestamp == kafka_dir.batch_timestamp(1)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert [(r.offset_delta, r.key, r.headers) for r in batch.records] == [(i, None, ()) for i in range(4)]
    assert [decode_metadata_value(r.value) for r in batch.records] == [
        (BeginTransactionRecord(name="Bootstrap records"), 0),
        (FeatureLevelRecord(name="metadata.version", feature_level=21), 0),
        (ZkMigrationStateRecord(zk_migration_state=0), 0),
        (EndTransactionRecord(), 0),
    ]
    control, _ = decode_batch(leader_change)
    assert control.is_control and control.base_offset == 0
    voter = LeaderChangeMessageVoter(voter_id=1)
    expected_change = LeaderChangeMessage(leader_id=1, voters=(voter,), granting_voters=(voter,))
    assert decode_control_record(control.records[0].key, control.records[0].value) == (expected_change, 0)
    controller, broker = decode_batch(registrations)[0].records
    assert isinstance(decode_metadata_value(controller.value)[0], RegisterControllerRecord)
    assert decode_metadata_value(broker.value) == (
        RegisterBrokerRecord(
            broker_id=1,
            incarnation_id=uuid.UUID(kafka_dir.B1),
            broker_epoch=6,
            end_points=(RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092),),
            features=(
                RegisterBrokerRecordBrokerFeature(
                    name="metadata.version", min_supported_version=1, max_supported_version=21
                ),
            ),
            rack=None,
            fenced=True,
            log_dirs=(uuid.UUID(kafka_dir.D1),),
        ),
        3,
    )


def test_every_hand_written_value_is_what_fencer_would_encode_for_it() -> None:
    """Each metadata value decodes, and encodes back to the same bytes: no stray or misplaced byte
    that a lenient decode would let through."""
    values = [
        value
        for batches in (LOG, kafka_dir.SNAPSHOT)
        for _, _, control, records in batches
        if not control
        for _, value in records
    ]
    assert len(values) == 37 - 2 + 12  # the log's data records, the snapshot's
    for value in values:
        record, version = decode_metadata_value(bytes.fromhex(value))
        assert encode_metadata_value(record, version).hex() == value, type(record).__name__


def test_the_log_replays_to_the_cluster_worked_out_by_hand(tmp_path: Path) -> None:
    expectation = adopt.expect(write_kafka_dir(tmp_path / "kafka"))
    assert (expectation.problems, expectation.notes) == ([], [])
    assert (expectation.end_offset, expectation.controller_epoch) == (kafka_dir.LOG_END_OFFSET, 2)
    brokers = {b: (f.epoch, f.incarnation, f.fenced, f.in_controlled_shutdown) for b, f in expectation.brokers.items()}
    assert brokers == EXPECTED_BROKERS
    assert expectation.topics == EXPECTED_TOPICS
    partitions = {
        key: (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch)
        for key, p in expectation.partitions.items()
    }
    assert partitions == EXPECTED_PARTITIONS
    assert all(p.leader_recovery_state == 0 and p.offline_replicas == () for p in expectation.partitions.values())
    assert expectation.log_dirs == {b: (uuid.UUID(d),) for b, d in kafka_dir.DIRECTORIES.items()}


def test_compare_state_names_each_difference(tmp_path: Path) -> None:
    expectation = adopt.expect(write_kafka_dir(tmp_path / "kafka"))
    document: dict[str, Any] = {
        "brokers": [
            {"id": b, "epoch": f.epoch, "incarnation_id": f.incarnation, "fenced": f.fenced,
             "in_controlled_shutdown": f.in_controlled_shutdown}
            for b, f in expectation.brokers.items()
        ],
        "topics": [
            {"name": name, "topic_id": topic_id, "partitions": [
                {"partition": index, "replicas": list(p.replicas), "isr": list(p.isr), "leader": p.leader,
                 "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                 "leader_recovery_state": p.leader_recovery_state, "offline_replicas": list(p.offline_replicas)}
                for (topic, index), p in expectation.partitions.items() if topic == name
            ]}
            for name, topic_id in expectation.topics.items()
        ],
    }  # fmt: skip
    assert adopt.compare_state(expectation, document) == {
        "state-brokers": [],
        "state-topics": [],
        "state-partitions": [],
    }
    document["brokers"][0]["epoch"] += 1
    document["topics"][0]["partitions"][1]["leader_epoch"] = 7
    del document["topics"][1]
    found = adopt.compare_state(expectation, document)
    assert [line.split(":")[0] for line in found["state-brokers"]] == ["broker 1"]
    assert found["state-topics"] == [f"topic solo: missing from /state (the log has {EXPECTED_TOPICS['solo']})"]
    assert [line.split(":")[0] for line in found["state-partitions"]] == [
        "partition ('orders', 1)",
        "partition ('solo', 0)",
    ]


def make_command(kafka_dirs: str) -> list[str]:
    """What `make check-kafka-dirs KAFKA_DIRS=...` runs (a dry run, the venv taken as installed), after python."""
    dry = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "check-kafka-dirs", f"KAFKA_DIRS={kafka_dirs}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert dry.returncode == 0, dry.stderr
    (line,) = [line for line in dry.stdout.splitlines() if line.startswith(".venv/bin/python ")]
    return shlex.split(line)[1:]


def run_adopt(command: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command, "--session-timeout-ms", str(SESSION_TIMEOUT_MS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"},
        check=False,
    )


def test_make_check_kafka_dirs_adopts_a_kafka_shaped_data_dir(tmp_path: Path) -> None:
    source = write_kafka_dir(tmp_path / "kafka")
    before = adopt.digest(source)
    command = make_command(str(source))
    assert command[0] == "tests/kafka_dirs/adopt.py"
    done = run_adopt(command, tmp_path)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    lines = out.splitlines()
    assert not [line for line in lines if line.startswith(("FAIL", "SKIP"))], out
    passed = {line.split(":")[0].removeprefix("PASS ") for line in lines if line.startswith("PASS ")}
    assert passed == {
        "dump-log", "check", "expectation", "daemon", "state-identity", "state-epoch", "state-offset",
        "state-brokers", "state-topics", "state-partitions", "register 1", "unfence 1", "register 2", "unfence 2",
        "register 3", "unfence 3", "leader-and-isr", "alter-partition", "controlled-shutdown", "heartbeats",
        "sigterm", "meta-properties", "quorum-state", "check-after", "source-unchanged",
    }, out  # fmt: skip
    # the log's controller epoch 2 (quorum-state's too): the daemon opens 3, at the log's end offset
    assert "PASS state-epoch: controller epoch 3, above the log's 2 and quorum-state's leaderEpoch 2" in lines
    assert "PASS state-offset: last applied offset 37 " in out
    # brokers 1 and 2 were fenced by their controlled shutdowns; broker 3's old session held it off
    registered = {line.split(":")[0]: line for line in lines if line.startswith("PASS register")}
    assert "DUPLICATE_BROKER_REGISTRATION" not in registered["PASS register 1"] + registered["PASS register 2"]
    assert "broker epoch 8 -> " in registered["PASS register 3"]
    assert "DUPLICATE_BROKER_REGISTRATION" in registered["PASS register 3"], out
    # broker 3 leads every partition of orders, each ISR [3] alone: it sends the same ISR, and they remain
    assert "PASS alter-partition: leader 3 of orders-0 sends the same one-member ISR [3] -> [3]" in out
    assert "RemainingPartitions [('orders', 0), ('orders', 1), ('orders', 2)]" in out
    assert out.rstrip().endswith("OK: every data dir adopted")
    assert adopt.digest(source) == before


def test_a_corrupt_data_dir_fails_naming_each_check(tmp_path: Path) -> None:
    source = write_kafka_dir(tmp_path / "kafka")
    segment = source / "__cluster_metadata-0" / f"{0:020d}.log"
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a CRC failure mid-log, valid batches after it
    segment.write_bytes(bytes(data))
    done = run_adopt(["tests/kafka_dirs/adopt.py", str(source)], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = done.stdout.split("FAILED:\n", 1)[1].split()
    assert [name for name in failed if not name.startswith("/")] == [
        "dump-log",
        "check",
        "expectation",
        "daemon",
        "check-after",
    ]


@pytest.mark.parametrize("isr, leader, expected", [((3,), 3, (3,)), ((1, 2, 3), 1, (1, 2)), ((2, 1), 1, (1,))])
def test_the_alter_partition_drops_the_last_follower(
    isr: tuple[int, ...], leader: int, expected: tuple[int, ...]
) -> None:
    assert adopt.without_last_follower(isr, leader) == expected
