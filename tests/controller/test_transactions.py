"""Metadata transactions (KIP-868) on a real data dir: start-up replay, the abort of a transaction
left open, fencer's own operations written inside one, and the checker agreeing on each.

Logs are written record by record with `MetadataLog.append` (one batch per group), as a Kafka
controller writes them: a transaction's Begin, its records and its End in separate batches.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from pathlib import Path

import pytest

from broker_sim.check import check
from controller.engine import FAILOVER_ABORT_REASON, ControllerEngine
from controller.log import LogError, MetadataLog
from controller.ops import brokers as brokers_op
from controller.slices import finish
from controller.state.cluster import ReplayError
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.records.control import LeaderChangeMessage
from protocol.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    PartitionRecord,
    TopicRecord,
)
from protocol.spec import Data

from .test_engine import start, workload

TOPIC_ID = uuid.UUID(int=0xABC)


def topic_records(name: str = "held", partitions: int = 2) -> list[list[tuple[Data, int]]]:
    """A topic's records, a batch each (replicas on brokers 1-3 of `workload`)."""
    topic = (TopicRecord(name=name, topic_id=TOPIC_ID), 0)
    parts = [
        (
            PartitionRecord(
                partition_id=i,
                topic_id=TOPIC_ID,
                replicas=(1, 2, 3),
                isr=(1, 2, 3),
                leader=1,
                leader_epoch=0,
                partition_epoch=0,
            ),
            1,
        )
        for i in range(partitions)
    ]
    return [[topic], *[[part] for part in parts]]


def append(data_dir: Path, groups: list[list[tuple[Data, int]]]) -> list[int]:
    """Append `groups` (a batch each) at the log's epoch, as its controller would have."""
    with MetadataLog.open(data_dir, fsync=False) as log:
        return log.append(groups, log.last_epoch, 0)


def written(data_dir: Path) -> list[Data]:
    with MetadataLog.open(data_dir, fsync=False) as log:
        return [entry.record for entry in log.read(0)]


def cluster(data_dir: Path) -> None:
    """Three brokers and a topic "orders" (tests/controller/test_engine.py's workload)."""
    engine = start(data_dir, rng=random.Random(18))
    workload(engine, rounds=1)
    engine.close()


def topics_after_restart(data_dir: Path) -> set[str]:
    engine = start(data_dir)
    try:
        return set(engine.core.state.replication.names)
    finally:
        engine.close()


def checked_topics(data_dir: Path) -> int:
    result = check(data_dir)
    assert result.ok, result.violations
    return result.counts["topics"]


BEGIN = [(BeginTransactionRecord(name="held"), 0)]
END = [(EndTransactionRecord(), 0)]
ABORT = [(AbortTransactionRecord(reason="test"), 0)]


def test_a_committed_transaction_takes_effect(tmp_path: Path) -> None:
    cluster(tmp_path)
    append(tmp_path, [BEGIN, *topic_records(), END])
    assert topics_after_restart(tmp_path) == {"orders", "held"}
    assert checked_topics(tmp_path) == 2


def test_an_aborted_transaction_takes_no_effect(tmp_path: Path) -> None:
    cluster(tmp_path)
    append(tmp_path, [BEGIN, *topic_records(), ABORT])
    assert topics_after_restart(tmp_path) == {"orders"}
    assert checked_topics(tmp_path) == 1
    # the name and id are free again: a later transaction may take them
    append(tmp_path, [BEGIN, *topic_records(), END])
    assert topics_after_restart(tmp_path) == {"orders", "held"}


def test_a_transaction_left_open_is_not_applied_and_the_next_start_aborts_it(tmp_path: Path) -> None:
    cluster(tmp_path)
    append(tmp_path, [BEGIN, *topic_records()])  # the controller died before the End
    engine = start(tmp_path)
    assert set(engine.core.state.replication.names) == {"orders"}
    assert engine.startup.aborted is not None and "('held')" in engine.startup.aborted
    engine.close()
    tail = written(tmp_path)[-2:]
    assert isinstance(tail[0], LeaderChangeMessage)
    assert tail[1] == AbortTransactionRecord(reason=FAILOVER_ABORT_REASON)
    assert checked_topics(tmp_path) == 1
    assert check(tmp_path).notes == []  # nothing left open for the checker to note
    # the next start has nothing to abort, and what comes after the abort counts
    engine = start(tmp_path)
    assert engine.startup.aborted is None
    engine.close()
    append(tmp_path, topic_records())
    assert topics_after_restart(tmp_path) == {"orders", "held"}
    assert sum(isinstance(record, AbortTransactionRecord) for record in written(tmp_path)) == 1


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([BEGIN, BEGIN, END], "a transaction begins while the metadata transaction begun at offset"),
        ([END], "EndTransactionRecord while no transaction is open"),
        ([ABORT], "AbortTransactionRecord while no transaction is open"),
    ],
    ids=["nested-begin", "end-alone", "abort-alone"],
)
def test_broken_framing_stops_start_up_naming_the_offset(
    tmp_path: Path, groups: list[list[tuple[Data, int]]], message: str
) -> None:
    cluster(tmp_path)
    offsets = append(tmp_path, groups)
    with pytest.raises(ReplayError, match=f"at offset {offsets[-2 if len(groups) > 1 else -1]}: {message}"):
        start(tmp_path)


def test_a_snapshot_holding_a_marker_is_refused(tmp_path: Path) -> None:
    cluster(tmp_path)
    with MetadataLog.open(tmp_path, fsync=False) as log:
        end = log.next_offset
        log.write_snapshot(end, log.last_epoch, [(TopicRecord(name="t", topic_id=TOPIC_ID), 0), *BEGIN], 0)
    with pytest.raises(ReplayError, match=r"BeginTransactionRecord at offset \d+ cannot appear within a snapshot"):
        start(tmp_path)


# ---------------------------------------------------------------------- fencer's own transactions
def split_engine(data_dir: Path) -> ControllerEngine:
    """The workload's cluster, restarted with operations limited to 2 records a batch."""
    cluster(data_dir)
    engine = start(data_dir, max_records_per_operation=2, rng=random.Random(18))
    engine.slice_seconds = 0  # pause at every batch boundary
    return engine


def shutdown_request(engine: ControllerEngine, broker: int) -> ControlledShutdownRequest:
    epoch = engine.core.state.cluster.brokers[broker].epoch
    return ControlledShutdownRequest(broker_id=broker, broker_epoch=epoch)


def test_an_operation_of_several_batches_is_one_transaction_and_its_orders_wait_for_the_end(tmp_path: Path) -> None:
    engine = split_engine(tmp_path)
    assert len(engine.core.state.replication.isrs_with(1)) >= 3  # flag + 3 changes: more than 2 batches
    engine.commit_now()  # what split_engine decided, and its orders
    start_offset = engine.log.next_offset
    work = engine.decide(7, 3, shutdown_request(engine, 1), 0)
    ended, orders_before_end, orders_after_end = False, [], []

    def commit_and_take_orders() -> None:
        nonlocal ended
        work = engine.commit()  # every staged batch reaches the disk, as at a commit point
        if work is None:
            return
        commit = finish(work)
        engine.write(commit)
        ended = ended or any(isinstance(entry.record, EndTransactionRecord) for entry in engine.log.read(start_offset))
        (orders_after_end if ended else orders_before_end).extend(commit.orders)

    commit_and_take_orders()
    for _ in work:  # each pause of the paced work: at a batch boundary
        commit_and_take_orders()
    commit_and_take_orders()
    assert ended and orders_before_end == []  # nothing leaves while the transaction is open
    assert orders_after_end, "the LeaderAndIsr orders of the shutdown go out once its End is staged"
    records = [entry.record for entry in engine.log.read(start_offset)]
    assert isinstance(records[0], BeginTransactionRecord) and records[0].name == "controlled shutdown of broker 1"
    assert isinstance(records[-1], EndTransactionRecord)
    assert len(records) > 4
    engine.close()
    assert checked_topics(tmp_path) == 1


def test_a_failure_inside_a_transaction_stops_the_engine_and_the_restart_aborts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = split_engine(tmp_path)
    before = engine.core.durable_view()
    calls = 0
    removal = brokers_op.removal

    def failing(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("planted failure")
        return removal(*args, **kwargs)  # type: ignore[arg-type]

    assert len(engine.core.state.replication.isrs_with(1)) >= 3
    monkeypatch.setattr(brokers_op, "removal", failing)
    work = engine.decide(7, 3, shutdown_request(engine, 1), 0)
    engine.commit_now()  # the Begin and the first batch reach the disk, as at a commit point
    with pytest.raises(RuntimeError, match="planted failure"):
        for _ in work:
            engine.commit_now()
    assert calls == 3
    with pytest.raises(LogError, match=r"failed inside its metadata transaction \('controlled shutdown of broker 1'"):
        engine.commit()
    with pytest.raises(LogError):
        engine.decide(7, 3, shutdown_request(engine, 2), 0)
    engine.close()
    monkeypatch.undo()
    assert any(isinstance(record, BeginTransactionRecord) for record in written(tmp_path))
    engine = start(tmp_path)
    assert engine.startup.aborted is not None
    after = engine.core.durable_view()
    engine.close()
    brokers_before, topics_before, _ = before  # type: ignore[misc]
    brokers_after, topics_after, _ = after  # type: ignore[misc]
    assert topics_after == topics_before  # no partition change of the cut operation applied
    assert {b: dataclasses.replace(r, in_controlled_shutdown=False) for b, r in brokers_after.items()} == {
        b: dataclasses.replace(r, in_controlled_shutdown=False) for b, r in brokers_before.items()
    }
    assert not brokers_after[1].in_controlled_shutdown  # the flag was inside the transaction too
    assert checked_topics(tmp_path) == 1
