"""Paced work (controller.slices) and the engine's decisions, replay and encoding in slices.

With `slice_seconds = 0` paced work yields at every natural boundary, so these tests count
slices deterministically: a large decision must never replay or encode more than one slice of
records between two yields (the daemon lets other tasks run at each yield).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

from controller.engine import REPLAY_SLICE_RECORDS, ControllerEngine
from controller.slices import Slices, finish, paced
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic, CreateTopicsResponse
from protocol.records.batch_writer import ENCODE_SLICE_RECORDS
from protocol.records.metadata import PartitionRecord

BIG = 9_999  # the largest single topic a CreateTopics may create (10,000 records with its TopicRecord)


def counting(n: int) -> Slices[str]:
    for _ in range(n):
        yield
    return "done"


def test_finish_runs_work_to_its_result() -> None:
    assert finish(counting(5)) == "done"


def test_paced_yields_at_every_boundary_with_a_zero_slice_and_never_with_a_long_one() -> None:
    zero = paced(counting(5), 0.0)
    assert sum(1 for _ in _drain(zero)) == 5
    assert list(_drain(paced(counting(5), 3600.0))) == []


def _drain(work: Slices[str]) -> Iterator[None]:
    while True:
        try:
            next(work)
        except StopIteration:
            return
        yield None


def engine_with_brokers(data_dir: Path) -> ControllerEngine:
    engine = ControllerEngine.start(data_dir, fsync=False, now_ns=0)
    cluster_id = engine.core.config.cluster_id
    for broker in (1, 2, 3):
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="localhost", port=9000 + broker)
        request = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=broker), listeners=(listener,)
        )
        epoch = finish(engine.decide(62, 3, request, 0)).broker_epoch  # type: ignore[union-attr]
        heartbeat = BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epoch, current_metadata_offset=1 << 40)
        finish(engine.decide(63, 1, heartbeat, 0))
    engine.commit_now()
    return engine


def big_topic() -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(CreateTopicsRequestCreatableTopic(name="big", num_partitions=BIG, replication_factor=3),)
    )


def test_a_large_decision_replays_one_slice_at_a_time_and_stays_one_batch(tmp_path: Path) -> None:
    engine = engine_with_brokers(tmp_path / "data")
    engine.slice_seconds = 0.0
    start = engine.core.state.last_offset
    work = engine.decide(19, 7, big_topic(), 0)
    replayed_at_yields = []
    while True:
        try:
            next(work)
        except StopIteration as stop:
            response = stop.value
            break
        replayed_at_yields.append(engine.core.state.last_offset - start)
    assert isinstance(response, CreateTopicsResponse) and response.topics[0].error_code == 0
    steps = [b - a for a, b in zip([0, *replayed_at_yields], replayed_at_yields, strict=False)]
    assert len(replayed_at_yields) >= (BIG + 1) // REPLAY_SLICE_RECORDS - 1
    assert max(steps) <= REPLAY_SLICE_RECORDS
    commit = finish(engine.commit())  # type: ignore[arg-type]
    assert commit.records == BIG + 1 and len(commit.prepared.batches) == 1  # atomic: one batch


def test_encoding_a_large_commit_yields_between_slices_and_writes_the_same_bytes(tmp_path: Path) -> None:
    engine = engine_with_brokers(tmp_path / "data")
    finish(engine.decide(19, 7, big_topic(), 0))
    staged = list(engine._staged)  # what the commit takes, to encode it again in one go below
    engine.slice_seconds = 0.0
    work = engine.commit()
    assert work is not None
    pauses = 0
    while True:
        try:
            next(work)
            pauses += 1
        except StopIteration as stop:
            commit = stop.value
            break
    assert pauses >= (BIG + 1) // ENCODE_SLICE_RECORDS
    assert commit.records == BIG + 1 and commit.end_offset == engine.log.next_offset + BIG + 1
    expected = engine.log.prepare(staged, engine.controller_epoch, 0)
    assert [offset for offset, _ in commit.prepared.batches] == [offset for offset, _ in expected.batches]
    assert [len(batch) for _, batch in commit.prepared.batches] == [len(batch) for _, batch in expected.batches]
    assert engine.write(commit) == BIG + 1
    reopened_records = [e.record for e in engine.log.read(0) if isinstance(e.record, PartitionRecord)]
    assert len(reopened_records) == BIG
