"""The engine on a real, fsync'd data dir: restart equivalence, snapshots, and crash safety.

Crash safety: truncating the last segment at every byte inside
its last batch recovers exactly the state of the batches before it; a flipped bit in the last
batch is truncated as a torn write; a flipped bit in a middle batch stops start-up with a
message naming the file and the offset (and `repair` truncates there).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

import pytest

from controller.control.orders import BrokerTarget
from controller.engine import ControllerEngine
from controller.log import LogError, LogSizes, SnapshotId, SnapshotWriteError
from controller.slices import finish
from controller.state.replication import IsrChanges
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.security_protocol import SecurityProtocol

PARTITION = "__cluster_metadata-0"
SEGMENT = f"{PARTITION}/00000000000000000000.log"


def start(data_dir: Path, **kwargs: object) -> ControllerEngine:
    return ControllerEngine.start(data_dir, fsync=False, now_ns=0, **kwargs)  # type: ignore[arg-type]


def workload(engine: ControllerEngine, rounds: int = 3) -> list[tuple[int, object]]:
    """Drive a small cluster; after each commit, note (log end offset, durable view)."""
    views = []

    def commit() -> None:
        engine.commit_now()
        if engine.snapshot_wanted:  # as the writer does, once the state equals the log
            engine.snapshot_now()
        views.append((engine.log.next_offset, engine.core.durable_view()))

    cluster_id = engine.core.config.cluster_id
    for broker in (1, 2, 3):
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="localhost", port=9000 + broker)
        request = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=broker), listeners=(listener,)
        )
        finish(engine.decide(62, 3, request, 0))
    commit()
    for broker in (1, 2, 3):
        epoch = engine.core.state.cluster.brokers[broker].epoch
        heartbeat = BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epoch, current_metadata_offset=99)
        finish(engine.decide(63, 1, heartbeat, 0))
    commit()
    topic = CreateTopicsRequestCreatableTopic(name="orders", num_partitions=4, replication_factor=3)
    finish(engine.decide(19, 7, CreateTopicsRequest(topics=(topic,)), 0))
    commit()
    topic_id = engine.core.state.replication.names["orders"]
    for _ in range(rounds):
        for index, part in sorted(engine.core.state.replication.topics[topic_id].partitions.items()):
            isr = part.isr[:2] if len(part.isr) == 3 else part.replicas
            data = AlterPartitionRequestPartitionData(
                partition_index=index, leader_epoch=part.leader_epoch, new_isr=isr, partition_epoch=part.partition_epoch
            )
            broker = engine.core.state.cluster.brokers[part.leader]
            request = AlterPartitionRequest(
                broker_id=part.leader,
                broker_epoch=broker.epoch,
                topics=(AlterPartitionRequestTopicData(topic_id=topic_id, partitions=(data,)),),
            )
            response = finish(engine.decide(56, 2, request, 0))
            assert response.topics[0].partitions[0].error_code == 0  # type: ignore[union-attr]
        commit()
    return views


def one_more_request(engine: ControllerEngine) -> object:
    """Commit exactly one more request (one batch); return the durable view from before it."""
    before = engine.core.durable_view()
    topic = CreateTopicsRequestCreatableTopic(name="last", num_partitions=1, replication_factor=2)
    finish(engine.decide(19, 7, CreateTopicsRequest(topics=(topic,)), 0))
    engine.commit_now()
    assert engine.core.durable_view() != before
    return before


def last_batch_start(engine_dir: Path) -> int:
    from protocol.records.batch import decode_batch

    data = (engine_dir / SEGMENT).read_bytes()
    position, last = 0, 0
    while position < len(data):
        last = position
        _, position = decode_batch(data, position)
    return last


def test_restart_rebuilds_the_same_state_and_opens_a_new_epoch(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    views = workload(engine)
    engine.close()
    again = start(tmp_path / "data")
    assert again.core.durable_view() == views[-1][1]
    assert again.controller_epoch == engine.controller_epoch + 1
    assert again.startup.replayed_records == views[-1][0]


def test_each_start_writes_quorum_state_with_its_epoch_and_never_goes_below_kafkas(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    engine.close()
    path = tmp_path / "data" / PARTITION / "quorum-state"
    node_id = engine.core.config.node_id
    assert json.loads(path.read_text()) == {
        "clusterId": "",
        "leaderId": node_id,
        "leaderEpoch": engine.controller_epoch,
        "votedId": -1,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": node_id}],
        "data_version": 0,
    }
    # a Kafka controller had reached epoch 14 in this dir (version 1, as with a dynamic quorum)
    path.write_text(
        f'{{"leaderId":{node_id},"leaderEpoch":14,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}}'
    )
    again = start(tmp_path / "data")
    again.close()
    assert again.controller_epoch == 15
    assert json.loads(path.read_text())["leaderEpoch"] == 15
    path.write_text("garbled")
    third = start(tmp_path / "data")
    third.close()
    assert third.controller_epoch == 16
    assert any(m.startswith(f"warning: ignored {path}") for m in third.log.recovery.messages)
    assert json.loads(path.read_text())["leaderEpoch"] == 16


def test_snapshots_are_taken_by_size_and_start_up_uses_them(tmp_path: Path) -> None:
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500)
    views = workload(engine, rounds=6)
    assert engine.log.snapshots(), "no snapshot was taken"
    engine.close()
    again = start(tmp_path / "data")
    assert again.startup.snapshot is not None
    assert again.startup.snapshot_records > 0
    assert again.core.durable_view() == views[-1][1]
    # the per-broker indexes, built once from the snapshot, as replay kept them record by record
    before, after = engine.core.state.replication, again.core.state.replication
    brokers = sorted(engine.core.state.cluster.brokers)
    assert brokers and before.partition_count > 0
    for state in (before, after):
        assert not state.deferred
    assert (after.partition_count, after.leaderless_count) == (before.partition_count, before.leaderless_count)
    for broker in brokers:
        assert (after.hosted_by(broker), after.isrs_with(broker), after.led_by(broker)) == (
            before.hosted_by(broker),
            before.isrs_with(broker),
            before.led_by(broker),
        )


def test_start_up_reports_each_phase_once_within_its_whole_time(tmp_path: Path) -> None:
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500)
    workload(engine, rounds=6)
    engine.close()
    began = time.perf_counter()
    again = start(tmp_path / "data")
    took = time.perf_counter() - began
    report = again.startup
    assert report.snapshot_records > 0 and report.replayed_records > 0
    phases = (report.snapshot_read_seconds, report.snapshot_replay_seconds, report.log_replay_seconds)
    assert all(phase > 0 for phase in phases)
    assert sum(phases) <= report.seconds <= took  # each phase counted once, the whole no longer than it took


def test_a_snapshot_keeps_the_segments_it_covers_until_retention_needs_the_space(tmp_path: Path) -> None:
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500)  # retention: 100 MiB
    views = workload(engine, rounds=12)
    assert len(engine.log.snapshots()) >= 2 and len(segment_files(tmp_path / "data")) >= 3
    assert engine.log.log_start_offset == 0  # as in Kafka: no segment goes because a snapshot covers it
    assert [entry.offset for entry in engine.log.read(0)] == list(range(engine.log.next_offset))
    engine.close()
    again = start(tmp_path / "data")
    assert again.core.durable_view() == views[-1][1]


def test_a_snapshot_found_torn_after_its_first_batches_falls_back_to_the_older_one_from_scratch(tmp_path: Path) -> None:
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500)
    views = workload(engine, rounds=12)
    older, newest = engine.log.snapshots()[-2:]
    engine.close()
    path = tmp_path / "data" / PARTITION / f"{newest.end_offset:020d}-{newest.epoch:010d}.checkpoint"
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF  # in the footer: every batch before it is replayed when it is found torn
    path.write_bytes(bytes(data))
    again = start(tmp_path / "data")
    assert again.startup.snapshot == older  # replayed into a fresh state: the tail after it replays cleanly
    assert any(message.startswith(f"skipped invalid snapshot {path}") for message in again.log.recovery.messages)
    assert again.core.durable_view() == views[-1][1]


def test_retention_bounds_the_log_and_start_up_uses_what_it_kept(tmp_path: Path) -> None:
    retention = 6000
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500, metadata_retention_bytes=retention)
    views = workload(engine, rounds=12)
    log = engine.log
    assert log.log_start_offset > 0 and len(log.snapshots()) >= 2
    log_files = [path for path in (tmp_path / "data" / PARTITION).iterdir() if path.name != "quorum-state"]
    assert log.total_bytes == sum(path.stat().st_size for path in log_files)
    newest = log.snapshots()[-1]
    # what the last retention pass left is within the limit; only the log since the newest snapshot came after it
    assert log.total_bytes - log.bytes_since_snapshot <= retention
    assert all(snapshot.end_offset >= log.log_start_offset for snapshot in log.snapshots())
    engine.close()
    again = start(tmp_path / "data", metadata_retention_bytes=retention)
    assert again.startup.snapshot == newest
    assert again.core.durable_view() == views[-1][1]


def test_a_failed_snapshot_leaves_the_engine_usable(tmp_path: Path) -> None:
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500)
    workload(engine, rounds=1)
    name = f"{engine.log.next_offset:020d}-{engine.controller_epoch:010d}.checkpoint.part"
    obstacle = tmp_path / "data" / PARTITION / name
    obstacle.mkdir()  # a real OS error as root: the .part cannot be opened for writing (EISDIR)
    before = (engine.log.snapshots(), engine.log.bytes_since_snapshot, engine.log.total_bytes)
    with pytest.raises(SnapshotWriteError, match=f"{name[: -len('.part')]}: .*Is a directory"):
        engine.write_snapshot(finish(engine.snapshot()))
    assert (engine.log.snapshots(), engine.log.bytes_since_snapshot, engine.log.total_bytes) == before
    obstacle.rmdir()
    expected = one_more_request(engine)  # commits still work
    assert engine.core.durable_view() != expected
    path = engine.snapshot_now()
    assert path.exists() and engine.log.bytes_since_snapshot == 0
    written = SnapshotId(engine.log.next_offset, engine.controller_epoch)
    assert engine.log.snapshots()[-1] == written
    engine.close()
    assert start(tmp_path / "data").startup.snapshot == written


def segment_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / PARTITION).glob("*.log"))


def test_truncation_anywhere_inside_the_last_batch_recovers_the_state_before_it(tmp_path: Path) -> None:
    original = tmp_path / "original"
    engine = start(original)
    workload(engine, rounds=1)
    expected = one_more_request(engine)
    engine.close()
    size = (original / SEGMENT).stat().st_size
    cut_from = last_batch_start(original)
    for cut in range(cut_from, size):
        copy = tmp_path / f"cut-{cut}"
        shutil.copytree(original, copy)
        with open(copy / SEGMENT, "r+b") as segment:
            segment.truncate(cut)
        recovered = start(copy)
        assert recovered.core.durable_view() == expected, f"cut at byte {cut}"
        assert recovered.startup.recovery.truncated_bytes == cut - cut_from
        recovered.close()
        shutil.rmtree(copy)


def test_a_flipped_bit_in_the_last_batch_is_a_torn_write(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    workload(engine, rounds=1)
    expected = one_more_request(engine)
    engine.close()
    position = last_batch_start(tmp_path / "data") + 40
    with open(tmp_path / "data" / SEGMENT, "r+b") as segment:
        segment.seek(position)
        byte = segment.read(1)[0]
        segment.seek(position)
        segment.write(bytes([byte ^ 0x10]))
    recovered = start(tmp_path / "data")
    assert recovered.core.durable_view() == expected
    assert recovered.startup.recovery.truncated_bytes > 0


def test_a_flipped_bit_in_the_middle_stops_start_up_unless_repaired(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    workload(engine, rounds=2)
    engine.close()
    with open(tmp_path / "data" / SEGMENT, "r+b") as segment:
        segment.seek(300)
        byte = segment.read(1)[0]
        segment.seek(300)
        segment.write(bytes([byte ^ 0x01]))
    with pytest.raises(LogError) as info:
        start(tmp_path / "data")
    message = str(info.value)
    assert "00000000000000000000.log" in message and "offset" in message
    repaired = start(tmp_path / "data", repair=True)
    assert repaired.startup.recovery.repaired


def test_cluster_id_mismatch_is_refused(tmp_path: Path) -> None:
    start(tmp_path / "data").close()
    with pytest.raises(LogError, match="cluster"):
        ControllerEngine.start(tmp_path / "data", cluster_id="another-cluster-id-00", fsync=False)


def test_commit_writes_one_batch_per_request(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    workload(engine, rounds=1)
    batches = list(engine.log.batches())
    # 1 leader change + 3 registrations + 3 unfences + 1 topic creation + 4 ISR changes
    assert len(batches) == 12
    assert sum(1 for _, _, batch in batches if batch.is_control) == 1


# ---------------------------------------------------------------------- what the metrics read
def shrink_request(engine: ControllerEngine, index: int) -> AlterPartitionRequest:
    """An AlterPartition from the leader of orders-`index` that drops the last member of its ISR."""
    topic_id = engine.core.state.replication.names["orders"]
    part = engine.core.state.replication.topics[topic_id].partitions[index]
    data = AlterPartitionRequestPartitionData(
        partition_index=index,
        leader_epoch=part.leader_epoch,
        new_isr=part.isr[:-1],
        partition_epoch=part.partition_epoch,
    )
    return AlterPartitionRequest(
        broker_id=part.leader,
        broker_epoch=engine.core.state.cluster.brokers[part.leader].epoch,
        topics=(AlterPartitionRequestTopicData(topic_id=topic_id, partitions=(data,)),),
    )


def test_isr_changes_count_once_durable_and_not_those_replayed_at_start_up(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    workload(engine, rounds=3)  # every partition: shrinks to 2, expands to 3, shrinks to 2
    assert engine.committed_isr_changes() == IsrChanges(shrinks=8, expands=4)
    engine.close()
    again = start(tmp_path / "data")
    assert again.core.isr_changes() == IsrChanges(shrinks=8, expands=4)  # replayed from the log...
    assert again.committed_isr_changes() == IsrChanges()  # ...but history: counters start with the process

    finish(again.decide(56, 2, shrink_request(again, 0), 0))
    assert again.committed_isr_changes() == IsrChanges()  # staged and replayed, not durable
    prepared = finish(again.commit())  # type: ignore[arg-type]
    assert again.committed_isr_changes() == IsrChanges()  # encoded, not written
    again.write(prepared)
    assert again.committed_isr_changes() == IsrChanges(shrinks=1)


def test_isr_changes_of_fencing_count_at_their_commit_and_a_batch_without_any_moves_nothing(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    workload(engine, rounds=1)  # ISRs of 2 members
    before = engine.committed_isr_changes()
    finish(engine.decide(19, 7, CreateTopicsRequest(topics=(CreateTopicsRequestCreatableTopic(name="x"),)), 0))
    engine.commit_now()
    assert engine.committed_isr_changes() == before  # a creation is no ISR change
    finish(engine.expire_sessions(1 << 62))  # every session ran out: the brokers are fenced in turn
    assert engine.committed_isr_changes() == before
    engine.commit_now()
    fenced = engine.committed_isr_changes()
    assert fenced.shrinks > before.shrinks and fenced.expands == before.expands
    assert fenced == engine.core.isr_changes()  # settled: every change replayed is committed


def test_log_sizes_are_the_bytes_of_the_segment_and_snapshot_files(tmp_path: Path) -> None:
    engine = start(tmp_path / "data", snapshot_bytes=2000, segment_bytes=1500, metadata_retention_bytes=6000)
    workload(engine, rounds=12)  # rolls, snapshots, and retention deletes files of both kinds
    assert engine.log.log_start_offset > 0

    def on_disk(pattern: str) -> int:
        return sum(path.stat().st_size for path in (tmp_path / "data" / PARTITION).glob(pattern))

    sizes = engine.log_sizes()
    assert sizes == LogSizes(segments=on_disk("*.log"), snapshots=on_disk("*.checkpoint"))
    assert sizes.segments > 0 and sizes.snapshots > 0
    assert sum(sizes) == engine.log.total_bytes


def test_the_control_channel_reaches_a_broker_at_its_first_listener_in_that_listeners_protocol(tmp_path: Path) -> None:
    engine = start(tmp_path / "data")
    listeners = (
        BrokerRegistrationRequestListener(name="SSL", host="broker-1.example.com", port=9094, security_protocol=1),
        BrokerRegistrationRequestListener(name="PLAINTEXT", host="broker-1.example.com", port=9092),
    )
    request = BrokerRegistrationRequest(
        broker_id=1, cluster_id=engine.core.config.cluster_id, incarnation_id=uuid.UUID(int=1), listeners=listeners
    )
    finish(engine.decide(62, 3, request, 0))
    engine.commit_now()
    assert engine.broker_address(1) is None  # fenced until its first heartbeat
    epoch = engine.core.state.cluster.brokers[1].epoch
    finish(engine.decide(63, 1, BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=99), 0))
    engine.commit_now()
    assert engine.broker_address(1) == BrokerTarget("broker-1.example.com", 9094, epoch, SecurityProtocol.SSL)
