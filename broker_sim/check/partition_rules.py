"""The partition rules of the log (see `rules` for the list): creation and every change, checked
against the state before the record, then applied to the model.

A record that breaks a rule is still applied (the controller's brokers saw it); a change naming a
topic or partition that does not exist is reported and skipped.

Rules besides (what the log alone cannot judge, kept for a journal's rules):
- An unclean election, a change naming a new leader (not -1) that was not in the ISR before the
  record, or that sets RECOVERING on a RECOVERED partition, is kept in `History.unclean` (an
  `UncleanElection`: where, when, the partition, the leader and the ISR before it); whether it
  was asked for is `leadership`'s to judge against the journal. Kept on the general path only (an
  ISR change alone names no leader).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from protocol.records.metadata import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord
from protocol.spec import Data

from .rendering import render_record
from .state import RECOVERING, Partition, PartitionState, offline_replicas, partition_state

if TYPE_CHECKING:
    from .rules import LogRules


class UncleanElection(NamedTuple):
    """A leader elected from outside the ISR (or into RECOVERING), as the log wrote it."""

    offset: int
    timestamp_ms: int
    topic_name: str
    partition: int
    label: str
    leader: int
    isr_before: tuple[int, ...]
    recovering: bool
    rendering: str


def partition_record(rules: LogRules, offset: int, record: Data) -> None:
    assert isinstance(record, PartitionRecord)
    topic = rules.model.topics.get(record.topic_id.int)
    if topic is None:
        rules.violation(
            "unknown-topic",
            f"a partition of topic {record.topic_id}, which does not exist",
            offset,
            records=[render_record(record, offset)],
        )
        return
    partition = topic.partitions.get(record.partition_id)
    created = partition is None
    if partition is None:
        partition = topic.partitions[record.partition_id] = Partition(topic, record.partition_id)
        if topic.created_at is not None and (info := rules.history.topics.get(topic.topic_id.int)):
            info[2].append(len(record.replicas))
    new = partition_state(record)
    check = _Check(rules, offset, partition, record)
    if record.partition_id < 0:
        check("unknown-partition", f"partition index {record.partition_id}")
    check.shape(new, len(record.directories))
    check.registered(record.replicas)
    check.record_epochs(created)
    added = [b for b in record.isr if created or b not in partition.isr]
    check.admitted(added, new)
    if record.leader != NO_LEADER and (created or record.leader != partition.leader):
        check.eligible_leader(record.leader, new)
    rules.model.update_partition(partition, new)
    if rules.model.watch:
        rules.model.capture(partition, offset, added)


def partition_change(rules: LogRules, offset: int, record: Data) -> None:
    assert isinstance(record, PartitionChangeRecord)
    topic = rules.model.topics.get(record.topic_id.int)
    partition = None if topic is None else topic.partitions.get(record.partition_id)
    if topic is None or partition is None:
        what = f"topic {record.topic_id}" if topic is None else f"partition {topic.name}-{record.partition_id}"
        rule = "unknown-topic" if topic is None else "unknown-partition"
        rules.violation(rule, f"changes {what}, which does not exist", offset, records=[render_record(record, offset)])
        return
    if _changes_nothing(record):
        rules.violation(
            "change-noop",
            f"changes nothing of {topic.name}-{record.partition_id} (every field says unchanged)",
            offset,
            partition=f"{topic.name}-{record.partition_id}",
            records=[render_record(record, offset)],
        )
    if (
        record.leader == NO_LEADER_CHANGE
        and record.isr is not None
        and record.replicas is None
        and record.directories is None
        and record.leader_recovery_state == -1
        and _plain_isr_change(rules, offset, partition, record.isr)
    ):
        return
    new = _merged(partition, record)
    check = _Check(rules, offset, partition, record)
    check.shape(new, len(record.directories) if record.directories is not None else 0)
    if record.replicas is not None:
        check.registered(record.replicas)
    old_isr = partition.isr
    added = [b for b in new.isr if b not in old_isr]
    check.admitted(added, new)
    if record.leader != NO_LEADER_CHANGE or new.recovery != partition.recovery:
        check.leader_change(new)
    for broker_id in new.offline - partition.offline:
        if broker_id in new.isr and len(new.isr) > 1:
            check(
                "offline-in-isr",
                f"broker {broker_id}'s replica is marked offline but stays in the ISR {list(new.isr)}",
            )
    rules.model.update_partition(partition, new)
    if rules.model.watch:
        rules.model.capture(partition, offset, added)


def _changes_nothing(record: PartitionChangeRecord) -> bool:
    return (
        record.leader == NO_LEADER_CHANGE
        and record.leader_recovery_state == -1
        and record.isr is None
        and record.replicas is None
        and record.removing_replicas is None
        and record.adding_replicas is None
        and record.directories is None
        and record.eligible_leader_replicas is None
        and record.last_known_elr is None
    )


def _plain_isr_change(rules: LogRules, offset: int, partition: Partition, isr: tuple[int, ...]) -> bool:
    """The most common record, an ISR change alone, applied if it breaks no rule (the hot path of
    replay); False, applying nothing, when it breaks one: then the general path reports it."""
    members = set(isr)
    if (
        not isr
        or len(members) != len(isr)
        or not members <= partition.replica_set
        or (partition.leader != NO_LEADER and partition.leader not in members)
        or (partition.recovery == RECOVERING and len(isr) > 1)
    ):
        return False
    old_isr = partition.isr
    added = [broker_id for broker_id in isr if broker_id not in old_isr]
    if added:
        brokers = rules.model.brokers
        for broker_id in added:
            broker = brokers.get(broker_id)
            if broker is None or broker.fenced or broker.shutting_down or broker_id in partition.offline:
                return False
    rules.model.set_isr(partition, isr)
    if rules.model.watch:
        rules.model.capture(partition, offset, added)
    return True


def _merged(partition: Partition, record: PartitionChangeRecord) -> PartitionState:
    """The partition after `record`, as Kafka's PartitionRegistration.merge computes it."""
    replicas = partition.replicas if record.replicas is None else record.replicas
    leader, leader_epoch = partition.leader, partition.leader_epoch
    if record.leader != NO_LEADER_CHANGE:
        leader, leader_epoch = record.leader, leader_epoch + 1
    if record.directories is not None:
        offline = offline_replicas(replicas, record.directories)
    else:
        offline = partition.offline if record.replicas is None else partition.offline & set(replicas)
    return PartitionState(
        replicas,
        partition.isr if record.isr is None else record.isr,
        leader,
        leader_epoch,
        partition.partition_epoch + 1,
        partition.recovery if record.leader_recovery_state == -1 else record.leader_recovery_state,
        offline,
    )


def _drops_replicas(partition: Partition, new: PartitionState) -> bool:
    """A reassignment that removes replicas: Kafka bumps the leader epoch without a leader change."""
    return any(replica not in new.replicas for replica in partition.replicas)


class _Check:
    """The checks of one partition record, reporting with its offset, partition and rendering."""

    __slots__ = ("offset", "partition", "record", "rules")

    def __init__(self, rules: LogRules, offset: int, partition: Partition, record: Data) -> None:
        self.rules, self.offset, self.partition, self.record = rules, offset, partition, record

    def __call__(self, rule: str, message: str, *extra: str, broker: int | None = None) -> None:
        if self.rules.sink.count_only(rule):
            return
        records = [render_record(self.record, self.offset), *extra]
        self.rules.violation(rule, message, self.offset, partition=self.partition.label, broker=broker, records=records)

    def shape(self, new: PartitionState, directories: int) -> None:
        replicas, isr, leader = new.replicas, new.isr, new.leader
        if not replicas or len(set(replicas)) != len(replicas) or min(replicas) < 0:
            self("replica-set", f"replicas {list(replicas)} are empty, repeat an id or hold a negative one")
        if directories and directories != len(replicas):
            self("replica-set", f"{directories} directories for {len(replicas)} replicas")
        if not isr or len(set(isr)) != len(isr) or not set(isr) <= set(replicas):
            self("isr-shape", f"ISR {list(isr)} is empty, repeats an id or is not within the replicas {list(replicas)}")
        if leader != NO_LEADER and leader not in isr:
            self("leader-in-isr", f"leader {leader} is not in the ISR {list(isr)}")
        if new.recovery not in (0, RECOVERING) or (new.recovery == RECOVERING and len(isr) > 1):
            self("leader-recovery", f"leader recovery state {new.recovery} with ISR {list(isr)}")
        if leader in new.offline:
            self("offline-leader", f"leader {leader}'s replica is offline", broker=leader)

    def record_epochs(self, created: bool) -> None:
        """A PartitionRecord's epochs: from 0 at creation; never lower on an existing partition."""
        record, partition = self.record, self.partition
        assert isinstance(record, PartitionRecord)
        if created and (record.leader_epoch < 0 or record.partition_epoch < 0):
            message = f"created with leader epoch {record.leader_epoch}, partition epoch {record.partition_epoch}"
            self("partition-epoch", message)
        if not created and record.partition_epoch <= partition.partition_epoch:
            message = f"recreated at partition epoch {record.partition_epoch}, not above {partition.partition_epoch}"
            self("partition-epoch", message)
        if not created and record.leader_epoch < partition.leader_epoch:
            self("leader-epoch", f"recreated at leader epoch {record.leader_epoch}, below {partition.leader_epoch}")

    def leader_change(self, new: PartitionState) -> None:
        """A change naming a leader, or the recovery state: an epoch bump needs a new, eligible leader."""
        record, partition = self.record, self.partition
        assert isinstance(record, PartitionChangeRecord)
        if record.leader == partition.leader and not _drops_replicas(partition, new):
            message = f"names the current leader {record.leader}: the leader epoch rises to {new.leader_epoch}"
            self("leader-epoch", message + " without a leader change")
        elif record.leader not in (NO_LEADER, NO_LEADER_CHANGE, partition.leader):
            self.eligible_leader(record.leader, new)
        new_leader = record.leader not in (NO_LEADER_CHANGE, partition.leader)
        recovering = new.recovery == RECOVERING and partition.recovery != RECOVERING
        if recovering and not new_leader:
            self("leader-recovery", "RECOVERING without an unclean election (no new leader)")
        if new_leader and record.leader != NO_LEADER and record.leader not in partition.isr:
            self.unclean_choice(record.leader, new)
        if new_leader and record.leader != NO_LEADER and (recovering or record.leader not in partition.isr):
            topic = partition.topic
            self.rules.history.unclean.append(
                UncleanElection(
                    self.offset, self.rules.timestamp_ms, topic.name, partition.index, partition.label,
                    record.leader, partition.isr, recovering, render_record(record, self.offset),
                )
            )  # fmt: skip

    def unclean_choice(self, leader: int, new: PartitionState) -> None:
        """A leader from outside the ISR: what Kafka's PartitionChangeBuilder elects uncleanly, the
        first acceptable replica in assignment order, the ISR that leader alone, RECOVERING (KIP-704)."""
        first = next((r for r in new.replicas if self._ineligible(r, new) is None), None)
        if first is not None and first != leader:
            self("unclean-election", f"elects {leader} uncleanly where the first eligible replica is {first}")
        if new.isr != (leader,) or new.recovery != RECOVERING:
            self(
                "unclean-election",
                f"elects {leader} uncleanly with the ISR {list(new.isr)}, recovery state {new.recovery}",
            )

    def registered(self, replicas: Iterable[int]) -> None:
        brokers = self.rules.model.brokers
        for replica in replicas:
            if replica not in brokers and replica >= 0:
                self("replica-set", f"replica {replica} is not a registered broker", broker=replica)

    def admitted(self, added: list[int], new: PartitionState) -> None:
        for broker_id in added:
            reason = self._ineligible(broker_id, new)
            if reason is not None:
                self(
                    "isr-admission",
                    f"broker {broker_id} joins the ISR {list(new.isr)} while {reason}",
                    *self.rules.last_change_of(broker_id),
                    broker=broker_id,
                )

    def eligible_leader(self, leader: int, new: PartitionState) -> None:
        reason = self._ineligible(leader, new)
        if reason is not None:
            self(
                "leader-eligibility",
                f"broker {leader} is made leader while {reason}",
                *self.rules.last_change_of(leader),
                broker=leader,
            )

    def _ineligible(self, broker_id: int, new: PartitionState) -> str | None:
        broker = self.rules.model.brokers.get(broker_id)
        if broker is None:
            return "not registered"
        if broker.fenced:
            return f"fenced (epoch {broker.epoch})"
        if broker.shutting_down:
            return f"in controlled shutdown (epoch {broker.epoch})"
        if broker_id in new.offline:
            return "its replica is offline"
        return None


def snapshot_partition_checks(rules: LogRules, offset: int, partition: Partition, record: PartitionRecord) -> None:
    """The rules a state loaded from a snapshot can be held to: its shape (its history is gone)."""
    _Check(rules, offset, partition, record).shape(partition.state(), len(record.directories))
