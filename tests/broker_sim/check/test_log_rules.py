"""Each log rule, broken on purpose in a hand-built log, is reported with its id at the record's offset.

Every log starts from `LogBuilder.cluster()` (epoch 1, brokers 1-4 registered and unfenced, topic `t`
with partitions 0 on [1, 2, 3] and 1 on [2, 3, 4], full ISRs, led by the first replica), which is
clean; each test adds the records that break one rule, after legitimate steps where the rule needs
them (a broker fenced only once it has left its ISRs and leaderships, as a correct controller does).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from broker_sim.check import CheckResult, check
from protocol.records.metadata import (
    LOST_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

from .logs import OTHER_TOPIC_ID, TOPIC_ID, LogBuilder

LOST, ONLINE = LOST_DIRECTORY, UNASSIGNED_DIRECTORY


def found(result: CheckResult) -> set[tuple[str, int | None]]:
    return {(violation.rule, violation.offset) for violation in result.violations}


def run(tmp_path: Path, build: Callable[[LogBuilder], int]) -> tuple[CheckResult, int]:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    offset = build(log)
    log.write()
    return check(tmp_path / "data"), offset


def test_the_base_cluster_is_clean(tmp_path: Path) -> None:
    result, _ = run(tmp_path, lambda log: log.next_offset)
    assert result.ok and result.violations == []
    assert result.counts["partitions"] == 2 and result.counts["brokers"] == 4


def fence_properly(log: LogBuilder, broker_id: int) -> int:
    """Take `broker_id` (3 or 4) out of every ISR of `t`, then fence it: what a correct controller writes."""
    if broker_id == 3:
        log.change(0, isr=(1, 2))
        log.change(1, isr=(2, 4))
    else:
        log.change(1, isr=(2, 3))
    return log.change_broker(broker_id, fenced=1)


def admit_fenced(log: LogBuilder) -> int:
    fence_properly(log, 3)
    return log.change(0, isr=(1, 2, 3))


def admit_shutting_down(log: LogBuilder) -> int:
    log.change_broker(3, in_controlled_shutdown=1)
    log.change(0, isr=(1, 2))
    return log.change(0, isr=(1, 2, 3))


def admit_offline(log: LogBuilder) -> int:
    log.change(0, isr=(1, 2), directories=(ONLINE, ONLINE, LOST))
    return log.change(0, isr=(1, 2, 3))


def create_with_fenced_member(log: LogBuilder) -> int:
    fence_properly(log, 4)
    record = PartitionRecord(
        partition_id=0,
        topic_id=OTHER_TOPIC_ID,
        replicas=(1, 4),
        isr=(1, 4),
        leader=1,
        leader_epoch=0,
        partition_epoch=0,
    )
    return log.batch(TopicRecord(name="u", topic_id=OTHER_TOPIC_ID), record) + 1


def lead_fenced_last_member(log: LogBuilder) -> int:
    log.change(1, isr=(2,))
    log.change(1, leader=-1)
    log.change_broker(2, fenced=1)  # the last member keeps its ISR place, leading nothing: correct
    return log.change(1, leader=2)


def lead_shutting_down(log: LogBuilder) -> int:
    log.change_broker(3, in_controlled_shutdown=1)
    return log.change(0, leader=3)


def fence_a_leader(log: LogBuilder) -> int:
    return log.change_broker(1, fenced=1)


def fence_a_member(log: LogBuilder) -> int:
    log.change(0, isr=(2, 3, 1), leader=2)
    log.change(0, isr=(2, 3))
    return log.change_broker(3, fenced=1)  # still in partition 1's ISR [2, 3, 4]


def same_leader_bump(log: LogBuilder) -> int:
    log.change(0, isr=(1, 2))
    return log.change(0, leader=1)


def recreate_lower_epoch(log: LogBuilder) -> int:
    log.change(0, leader=2)
    record = PartitionRecord(
        partition_id=0,
        topic_id=TOPIC_ID,
        replicas=(1, 2, 3),
        isr=(1, 2, 3),
        leader=1,
        leader_epoch=0,
        partition_epoch=0,
    )
    return log.batch(record)


def recovering_without_election(log: LogBuilder) -> int:
    log.change(0, isr=(1,))
    return log.change(0, leader_recovery_state=1)


def recovering_wide_isr(log: LogBuilder) -> int:
    log.change(1, isr=(2,))
    log.change(1, leader=-1)
    log.change(1, leader=3, isr=(3,), leader_recovery_state=1)  # an unclean election: correct
    return log.change(1, isr=(3, 4))


def new_incarnation_lower_epoch(log: LogBuilder) -> int:
    fence_properly(log, 4)
    return _register(log, 4, generation=1, epoch=2)


def _register(log: LogBuilder, broker_id: int, generation: int, epoch: int, **flags: bool) -> int:
    offset = log.next_offset
    log.register(broker_id, generation, epoch=epoch, **flags)
    return offset


def same_incarnation_lower_epoch(log: LogBuilder) -> int:
    return _register(log, 2, generation=0, epoch=0)


def new_incarnation_unfenced(log: LogBuilder) -> int:
    fence_properly(log, 4)
    return _register(log, 4, generation=1, epoch=log.next_offset, fenced=False)


def re_register_ends_shutdown(log: LogBuilder) -> int:
    log.change_broker(4, in_controlled_shutdown=1)
    return _register(log, 4, generation=0, epoch=log.epochs[4], fenced=False, shutdown=False)


def change_with_wrong_epoch(log: LogBuilder) -> int:
    log.epochs[2] += 100
    return log.change_broker(2, fenced=1)


def unfence_during_shutdown(log: LogBuilder) -> int:
    log.change(1, isr=(2, 3))
    log.change_broker(4, in_controlled_shutdown=1)
    log.change_broker(4, fenced=1)
    return log.change_broker(4, fenced=-1)


def epoch_goes_down(log: LogBuilder) -> int:
    log.leader_change(2)
    return log.change(0, isr=(1, 2), epoch=1)


def data_batch_raises_epoch(log: LogBuilder) -> int:
    return log.change(0, isr=(1, 2), epoch=2)


def leader_change_same_epoch(log: LogBuilder) -> int:
    return log.leader_change(1)


def change_unknown_topic(log: LogBuilder) -> int:
    return log.batch(
        PartitionRecord(partition_id=0, topic_id=OTHER_TOPIC_ID, replicas=(1,), isr=(1,), leader=1, leader_epoch=0)
    )


def topic_name_taken(log: LogBuilder) -> int:
    return log.batch(TopicRecord(name="t", topic_id=OTHER_TOPIC_ID))


def topic_id_reused(log: LogBuilder) -> int:
    log.batch(RemoveTopicRecord(topic_id=TOPIC_ID))
    return log.batch(TopicRecord(name="again", topic_id=TOPIC_ID))


def remove_unknown_topic(log: LogBuilder) -> int:
    return log.batch(RemoveTopicRecord(topic_id=uuid.uuid4()))


CASES: dict[str, tuple[Callable[[LogBuilder], int], str]] = {
    "fenced member admitted": (admit_fenced, "isr-admission"),
    "shutting-down member admitted": (admit_shutting_down, "isr-admission"),
    "offline replica admitted": (admit_offline, "isr-admission"),
    "fenced member at creation": (create_with_fenced_member, "isr-admission"),
    "leader outside the ISR": (lambda log: log.change(0, isr=(1, 2), leader=3), "leader-in-isr"),
    "ISR member not a replica": (lambda log: log.change(0, isr=(1, 2, 4)), "isr-shape"),
    "ISR with a duplicate": (lambda log: log.change(0, isr=(1, 2, 2)), "isr-shape"),
    "empty ISR": (lambda log: log.change(0, isr=(), leader=-1), "isr-shape"),
    "duplicate replica": (lambda log: log.change(0, replicas=(1, 2, 2)), "replica-set"),
    "unregistered replica": (lambda log: log.change(0, replicas=(1, 2, 3, 9)), "replica-set"),
    "fenced last member made leader": (lead_fenced_last_member, "leader-eligibility"),
    "shutting-down broker made leader": (lead_shutting_down, "leader-eligibility"),
    "leader's replica offline": (lambda log: log.change(0, directories=(LOST, ONLINE, ONLINE)), "offline-leader"),
    "offline replica kept in the ISR": (
        lambda log: log.change(0, directories=(ONLINE, LOST, ONLINE)),
        "offline-in-isr",
    ),
    "leader fenced": (fence_a_leader, "fenced-leader"),
    "member fenced": (fence_a_member, "fenced-leader"),
    "leader epoch bumped without a leader change": (same_leader_bump, "leader-epoch"),
    "partition recreated with lower epochs": (recreate_lower_epoch, "partition-epoch"),
    "RECOVERING without an election": (recovering_without_election, "leader-recovery"),
    "RECOVERING with two ISR members": (recovering_wide_isr, "leader-recovery"),
    "new incarnation, lower epoch": (new_incarnation_lower_epoch, "broker-epoch"),
    "same incarnation, lower epoch": (same_incarnation_lower_epoch, "broker-epoch"),
    "new incarnation unfenced": (new_incarnation_unfenced, "broker-registration"),
    "re-registration ends a controlled shutdown": (re_register_ends_shutdown, "broker-registration"),
    "broker change with a wrong epoch": (change_with_wrong_epoch, "broker-change"),
    "unfenced during controlled shutdown": (unfence_during_shutdown, "broker-change"),
    "controller epoch goes down": (epoch_goes_down, "controller-epoch"),
    "data batch raises the epoch": (data_batch_raises_epoch, "controller-epoch"),
    "LeaderChange without a new epoch": (leader_change_same_epoch, "controller-epoch"),
    "partition of an unknown topic": (change_unknown_topic, "unknown-topic"),
    "topic name taken": (topic_name_taken, "unknown-topic"),
    "topic id reused": (topic_id_reused, "unknown-topic"),
    "unknown topic removed": (remove_unknown_topic, "unknown-topic"),
    "change of an unknown partition": (lambda log: log.change(7, isr=(1,)), "unknown-partition"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_broken_rule_is_reported_at_its_offset(tmp_path: Path, case: str) -> None:
    build, rule = CASES[case]
    result, offset = run(tmp_path, build)
    assert (rule, offset) in found(result), [violation.line() for violation in result.violations]
    assert not result.ok
    violation = next(v for v in result.violations if (v.rule, v.offset) == (rule, offset))
    assert violation.records, "names the records involved"


def test_a_fenced_broker_keeps_its_leadership_only_where_nobody_can_take_it(tmp_path: Path) -> None:
    """Correct steps around the rules that must not fire: the last ISR member kept when fenced, a
    leader without successor kept during controlled shutdown, an offline replica kept as the last
    member, a re-registration while an old incarnation still leads, a reassignment's epoch bump."""

    def build(log: LogBuilder) -> int:
        log.change(1, isr=(2,))
        log.change_broker(2, in_controlled_shutdown=1)  # 2 leads [2]-only partition 1: it stays leader
        log.change(0, isr=(1, 3))  # 2 leaves partition 0's ISR
        # the end of the shutdown: fencing leaves 2 as the last member (one batch: a sole leader in
        # controlled shutdown goes leaderless only with its fencing, shutdown-keeps-sole-leader)
        log.batch(
            PartitionChangeRecord(partition_id=1, topic_id=TOPIC_ID, leader=-1),
            BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=log.epochs[2], fenced=1),
        )
        log.register(2, generation=1)
        log.change_broker(2, fenced=-1)
        log.change(1, leader=2)  # the unfenced new incarnation leads where its ISR holds it
        log.change(0, isr=(1,), directories=(ONLINE, ONLINE, LOST))
        log.change(0, directories=(LOST, ONLINE, ONLINE), leader=-1)  # the last member, offline: kept
        log.change(0, directories=(ONLINE, ONLINE, ONLINE), leader=1)
        log.register(4, generation=1)  # 4 bounces while in partition 1's ISR: Kafka leaves it there
        return log.change(1, replicas=(2, 3), isr=(2, 3), leader=2)  # a reassignment dropping 4: epoch bump

    result, _ = run(tmp_path, build)
    assert result.violations == [] and result.ok


def test_a_snapshot_that_differs_from_the_replayed_state_is_reported(tmp_path: Path) -> None:
    from controller.log.model import SnapshotId
    from controller.log.snapshots import encode_snapshot, write_snapshot_file

    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1, 2))
    log.write()
    brokers = [(r, 3) for r in _registrations(log)]
    partition = PartitionRecord(
        partition_id=0,
        topic_id=TOPIC_ID,
        replicas=(1, 2, 3),
        isr=(1, 2, 3),
        leader=1,
        leader_epoch=0,
        partition_epoch=1,
    )
    other = PartitionRecord(
        partition_id=1,
        topic_id=TOPIC_ID,
        replicas=(2, 3, 4),
        isr=(2, 3, 4),
        leader=2,
        leader_epoch=0,
        partition_epoch=0,
    )
    records = [*brokers, (TopicRecord(name="t", topic_id=TOPIC_ID), 0), (partition, 1), (other, 1)]
    write_snapshot_file(
        log.data_dir / "__cluster_metadata-0",
        SnapshotId(log.next_offset, 1),
        encode_snapshot(1, records, 0),
        fsync=False,
    )
    result = check(tmp_path / "data")
    assert [(v.rule, v.offset) for v in result.violations] == [("snapshot-state", log.next_offset)]
    message = result.violations[0].message
    assert "t-0" in message and "isr=[1, 2, 3]" in message and "isr=[1, 2]" in message


def _registrations(log: LogBuilder) -> list[object]:
    from protocol.records.metadata import RegisterBrokerRecord

    from .logs import incarnation

    return [
        RegisterBrokerRecord(broker_id=b, incarnation_id=incarnation(b), broker_epoch=epoch, fenced=False)
        for b, epoch in sorted(log.epochs.items())
    ]


def test_repeated_violations_are_all_counted_but_only_the_first_kept(tmp_path: Path) -> None:
    def build(log: LogBuilder) -> int:
        for _ in range(200):
            log.change(0, leader=1)
        return log.next_offset

    result, _ = run(tmp_path, build)
    assert result.violation_counts == {"leader-epoch": 200}
    assert len(result.violations) == 50
