"""Metadata transactions (KIP-868) in the checker's replay: the records between a BeginTransactionRecord
and its EndTransactionRecord take effect together at the End, an AbortTransactionRecord drops them, a
transaction still open at the log's end is not applied (a note); broken framing (a nested Begin, an End or
Abort with no transaction open, a snapshot ending inside a transaction or holding a marker) is a
`transaction-framing` violation at its offset.

Every log starts from `LogBuilder.cluster()` (epoch 1, brokers 1-4 registered and unfenced, topic `t`
with partitions 0 and 1), which is clean.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from broker_sim.check import RULES, CheckResult, check
from protocol.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    latest_version,
)
from protocol.spec import Data

from .logs import OTHER_TOPIC_ID, TOPIC_ID, LogBuilder, incarnation

FRAMING = "transaction-framing"


def found(result: CheckResult) -> list[tuple[str, int | None]]:
    return [(violation.rule, violation.offset) for violation in result.violations]


def new_topic() -> tuple[TopicRecord, PartitionRecord]:
    """Topic `u` (OTHER_TOPIC_ID) with one partition on [1, 2, 3], led by 1."""
    return (
        TopicRecord(name="u", topic_id=OTHER_TOPIC_ID),
        PartitionRecord(
            partition_id=0,
            topic_id=OTHER_TOPIC_ID,
            replicas=(1, 2, 3),
            isr=(1, 2, 3),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        ),
    )


def cluster(tmp_path: Path) -> LogBuilder:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    return log


def test_the_rule_has_an_invariant() -> None:
    assert FRAMING in RULES and "transaction" in RULES[FRAMING]


def test_a_committed_transaction_takes_effect_at_its_end_not_before(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    begin = log.batch(BeginTransactionRecord(name="create u"))
    log.batch(*new_topic())
    bad = log.batch(PartitionChangeRecord(partition_id=0, topic_id=OTHER_TOPIC_ID, leader=4))  # 4 is not in the ISR
    log.write()
    before = check(log.data_dir)  # the log ends before the End: nothing of the transaction is applied
    assert before.counts["topics"] == 1 and before.counts["partitions"] == 2
    assert before.violations == [] and before.ok
    log.batch(EndTransactionRecord())
    log.write()
    after = check(log.data_dir)  # applied at the End, each record through the same rules, at its own offset
    assert after.counts["topics"] == 2 and after.counts["partitions"] == 3
    assert ("leader-in-isr", bad) in found(after) and FRAMING not in after.violation_counts
    assert not any("still open" in note for note in after.notes)
    assert begin < bad


def test_a_transaction_spanning_a_controller_epoch_change_still_commits_at_its_end(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    log.batch(BeginTransactionRecord(), new_topic()[0])
    log.leader_change(2)  # a control batch inside: applied where it stands, not buffered
    log.batch(new_topic()[1])
    log.write()
    before = check(log.data_dir)
    assert before.ok and before.counts["topics"] == 1 and before.counts["partitions"] == 2
    log.batch(EndTransactionRecord())
    log.write()
    result = check(log.data_dir)
    assert result.ok and result.violations == []
    assert result.counts["topics"] == 2 and result.counts["partitions"] == 3


def test_an_aborted_transaction_is_dropped(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    log.batch(BeginTransactionRecord(name="create u"), *new_topic())
    log.batch(AbortTransactionRecord(reason="controller failover"))
    log.write()
    aborted = check(log.data_dir)
    assert aborted.ok and aborted.violations == []
    assert aborted.counts["topics"] == 1 and aborted.counts["partitions"] == 2
    log.batch(*new_topic())  # the same topic again: fresh, since the aborted one never existed
    log.write()
    again = check(log.data_dir)
    assert again.ok and again.violations == [], [v.line() for v in again.violations]
    assert again.counts["topics"] == 2


def test_a_transaction_open_at_the_end_of_the_log_is_not_applied_and_noted(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    begin = log.batch(BeginTransactionRecord(name="create u"))
    log.batch(*new_topic())
    log.batch(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=(1, 2)))
    log.write()
    result = check(log.data_dir)
    assert result.ok and result.violations == []
    assert result.counts["topics"] == 1 and result.counts["partitions"] == 2
    note = (
        f"the metadata transaction begun at offset {begin} ('create u') was still open at the end of the log: "
        "its 3 records are not applied"
    )
    assert note in result.notes


def test_a_begin_inside_an_open_transaction_is_reported(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    log.batch(BeginTransactionRecord(name="outer"))
    nested = log.batch(BeginTransactionRecord(name="inner"), *new_topic())
    log.batch(EndTransactionRecord())
    log.write()
    result = check(log.data_dir)
    assert found(result) == [(FRAMING, nested)]
    assert "still open" in result.violations[0].message and not result.ok
    assert result.counts["topics"] == 2  # the End closes the transaction: all of it applied


def test_an_end_or_abort_with_no_transaction_open_is_reported(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    end = log.batch(EndTransactionRecord())
    log.batch(BeginTransactionRecord(), *new_topic())
    log.batch(EndTransactionRecord())
    abort = log.batch(AbortTransactionRecord(reason="twice"))
    log.write()
    result = check(log.data_dir)
    assert found(result) == [(FRAMING, end), (FRAMING, abort)]
    assert all("no transaction is open" in violation.message for violation in result.violations)
    assert result.counts["topics"] == 2


def _snapshot(log: LogBuilder, end_offset: int, *extra: Data) -> None:
    """A snapshot at `end_offset` of the state `cluster()` leaves (plus `extra` records)."""
    from controller.log.model import SnapshotId
    from controller.log.snapshots import encode_snapshot, write_snapshot_file

    brokers: list[Data] = [
        RegisterBrokerRecord(broker_id=b, incarnation_id=incarnation(b), broker_epoch=epoch, fenced=False)
        for b, epoch in sorted(log.epochs.items())
    ]
    partitions: list[Data] = [
        PartitionRecord(
            partition_id=index,
            topic_id=TOPIC_ID,
            replicas=replicas,
            isr=replicas,
            leader=replicas[0],
            leader_epoch=0,
            partition_epoch=0,
        )
        for index, replicas in ((0, (1, 2, 3)), (1, (2, 3, 4)))
    ]
    records = [*brokers, TopicRecord(name="t", topic_id=TOPIC_ID), *partitions, *extra]
    write_snapshot_file(
        log.data_dir / "__cluster_metadata-0",
        SnapshotId(end_offset, 1),
        encode_snapshot(1, [(record, latest_version(type(record))) for record in records], 0),
        fsync=False,
    )


def test_a_snapshot_ending_inside_an_open_transaction_is_reported(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    clean = log.next_offset
    log.batch(BeginTransactionRecord(), new_topic()[0])
    inside = log.next_offset
    log.batch(new_topic()[1])
    log.batch(EndTransactionRecord())
    log.write()
    _snapshot(log, clean)
    assert check(log.data_dir).ok
    _snapshot(log, inside)
    result = check(log.data_dir)
    assert found(result) == [(FRAMING, inside)]
    assert "inside the transaction begun at offset" in result.violations[0].message


def test_a_snapshot_holding_a_transaction_marker_is_reported(tmp_path: Path) -> None:
    log = cluster(tmp_path)
    end = log.next_offset
    log.write()
    _snapshot(log, end, BeginTransactionRecord(name=str(uuid.UUID(int=1))))
    result = check(log.data_dir)
    assert found(result) == [(FRAMING, end)]
    assert "BeginTransactionRecord" in result.violations[0].message
