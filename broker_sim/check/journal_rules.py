"""The journal against the log: what the controller told the fleet must be what it committed.

Rules (ids in violations.RULES):
- `journal_plan.plan` reads the journal once, before the log is opened, and names the partition
  states to capture during replay.
- PartitionAcked: the log reaches the acknowledged partition epoch with the acknowledged leader,
  leader epoch and ISR (`ack-lost`); the answer is the requested ISR led by the requester
  (`ack-answer`); for v3, each ISR member the change added had, at that position, the broker epoch
  its leader named, -1 meaning unchecked (`ack-member-epoch`; an epoch the broker registered only
  later is what a no-op re-send names, not a stale member).
- StateObserved: the log has that state at that partition epoch (`observed-state`), sent with a
  controller epoch the log has and not older than the epoch that committed the state
  (`observed-controller-epoch`). One (partition, leader epoch) names one leader across every
  observation and acknowledgement (`split-leadership`).
- Registered and TopicCreated name records of the log (`registration-lost`, `topic-lost`).
- StaleReplay, RequestProbe, Probe (requests a correct controller must refuse) and BadAnswer:
  judged by `refusal_rules.RefusalChecks`, the part of `JournalCheck` that holds them, against
  the answers `probe_answers` names.
- Where the log cannot tell (it starts at a snapshot after the state, or a problem stopped the
  reading before it), the entry is counted as unverifiable, never as a violation; so is an entry
  naming the zero topic id (a fleet that knew the topic by name only).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping

from broker_sim.journal import (
    BadAnswer,
    Entry,
    PartitionAcked,
    Probe,
    Registered,
    RequestProbe,
    ShutdownTracked,
    StaleReplay,
    StateObserved,
    TopicCreated,
)

from .events import LogEnd, Subscriber
from .journal_plan import JournalPlan, Key
from .refusal_rules import RefusalChecks
from .rendering import render_entry
from .rules import History, LogRules
from .state import Captured, Model
from .violations import Violation


class JournalCheck(RefusalChecks, Subscriber):
    """Judges the journal's entries against what replay captured; counts what it could not verify."""

    name = "journal"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.model: Model = image.model
        self.history: History = image.history
        self.plan = JournalPlan()
        self.log_is_whole = False  # read from offset 0 to the end without a problem
        self.log_complete = False  # no problem stopped the reading early
        self.checked: Counter[str] = Counter()
        self._unverifiable: Counter[str] = Counter()
        self.leaders: dict[tuple[int, int, int], tuple[int, str]] = {}
        self.shutdowns_started: dict[tuple[int, int], int] = {}  # (broker, epoch) -> first start

    # ------------------------------------------------------------------ events
    def on_journal_end(self, plan: JournalPlan) -> None:
        self.plan = plan
        for entry in plan.lifecycle:
            if isinstance(entry, ShutdownTracked):
                key = (entry.broker, entry.broker_epoch)
                self.shutdowns_started[key] = min(
                    entry.started_wall_ns, self.shutdowns_started.get(key, entry.started_wall_ns)
                )

    def on_log_end(self, end: LogEnd) -> None:
        self.log_is_whole, self.log_complete = end.whole, end.complete
        self.run()

    def counts(self) -> Mapping[str, int]:
        return {f"journal_{kind}": number for kind, number in self.checked.items()}

    def unverifiable(self) -> Mapping[str, int]:
        return self._unverifiable

    def run(self) -> None:
        handlers = {
            PartitionAcked: self.acked,
            Registered: self.registered,
            TopicCreated: self.topic_created,
            StaleReplay: self.stale_replay,
            RequestProbe: self.request_probe,
            Probe: self.isr_probe,
            BadAnswer: self.bad_answer,
        }
        for entry in self.plan.judged:
            handler = handlers.get(type(entry))
            if handler is not None:
                handler(entry)  # type: ignore[operator]
        for observed, count in self.plan.observed.values():
            self.observed(observed, count)

    def violation(self, rule: str, message: str, entry: Entry, offset: int | None = None, **where: object) -> None:
        if not self.sink.count_only(rule):
            self.sink.add(Violation(rule, message, offset, journal=render_entry(entry), **where))  # type: ignore[arg-type]

    def _state_at(self, entry: PartitionAcked | StateObserved) -> tuple[Key | None, Captured | None]:
        topic = self.plan.topic_ids.get(entry.topic_id)
        if topic is None:
            return None, None
        key = (topic, entry.partition, entry.partition_epoch)
        return key, self.model.captured.get(key)

    def _missing_is_verifiable(self, key: Key) -> bool:
        """Can the log's lack of this state be trusted? (It may lie before the base snapshot.)"""
        if not self.log_complete:
            return False
        if self.log_is_whole:
            return True
        topic = self.history.topics.get(key[0])
        if topic is not None and topic[1] is not None:
            return True  # created within the log read
        base = self.model.base_epochs.get((key[0], key[1]))
        return base is not None and key[2] >= base

    def _where(self, key: Key) -> str:
        topic = self.model.topics.get(key[0])
        name = topic.name if topic is not None else self.history.topics.get(key[0], ("?",))[0]
        return f"{name}-{key[1]} ({uuid.UUID(int=key[0])})"

    def _latest(self, key: Key) -> str:
        topic = self.model.topics.get(key[0])
        partition = None if topic is None else topic.partitions.get(key[1])
        if partition is None:
            return "the partition is gone from the log's final state"
        return f"the log's last partition epoch is {partition.partition_epoch}"

    # ------------------------------------------------------------------ partition states
    def acked(self, entry: PartitionAcked) -> None:
        key, captured = self._state_at(entry)
        if key is None:
            return
        where = self._where(key)
        if list(entry.isr) != list(entry.requested_isr) or entry.leader != entry.broker:
            self.violation(
                "ack-answer",
                f"answered NONE with leader {entry.leader}, ISR {entry.isr} "
                f"to leader {entry.broker} asking for ISR {entry.requested_isr}",
                entry,
                partition=where,
                broker=entry.broker,
            )
        self._leader_seen(key, entry.leader_epoch, entry.leader, entry)
        if captured is None:
            self._missing(key, entry, "ack-lost", "acknowledged", where)
            return
        self.checked["partition_acked"] += 1
        state = captured.state
        if (state.leader, state.leader_epoch, list(state.isr)) != (entry.leader, entry.leader_epoch, list(entry.isr)):
            self.violation(
                "ack-lost",
                f"acknowledged leader {entry.leader}, leader epoch {entry.leader_epoch}, ISR {entry.isr} "
                f"at partition epoch {entry.partition_epoch}; the log has leader {state.leader}, "
                f"leader epoch {state.leader_epoch}, ISR {list(state.isr)}",
                entry,
                captured.offset,
                partition=where,
                broker=entry.broker,
            )
        if entry.api_version >= 3 and captured.offset is not None:
            self._member_epochs(entry, captured, where)

    def _member_epochs(self, entry: PartitionAcked, captured: Captured, where: str) -> None:
        assert captured.offset is not None
        for member, named in zip(entry.requested_isr, entry.member_epochs, strict=False):
            if named == -1 or member not in captured.added_members:
                continue
            actual = captured.added_members[member]
            if named == actual:
                continue
            later = self.history.registrations.get((member, named))
            if later is not None and later[1] is not None and later[1] > captured.offset:
                continue  # a no-op re-send after the member re-registered names its newer epoch
            registered = "not registered" if actual is None else f"registered at epoch {actual}"
            self.violation(
                "ack-member-epoch",
                f"ISR member {member} was added with broker epoch {named} named by the leader, but it was {registered}",
                entry,
                captured.offset,
                partition=where,
                broker=member,
            )

    def observed(self, entry: StateObserved, count: int) -> None:
        """`count` brokers accepted this very state."""
        key, captured = self._state_at(entry)
        if key is None:
            return
        where = self._where(key)
        self._leader_seen(key, entry.leader_epoch, entry.leader, entry)
        self._controller_epoch(entry, captured, where)
        if captured is None:
            self._missing(key, entry, "observed-state", "observed", where, count)
            return
        self.checked["state_observed"] += count
        state = captured.state
        told = (entry.leader, entry.leader_epoch, list(entry.isr), list(entry.replicas))
        committed = (state.leader, state.leader_epoch, list(state.isr), list(state.replicas))
        if told != committed:
            self.violation(
                "observed-state",
                f"broker {entry.broker} accepted leader {told[0]}, leader epoch {told[1]}, ISR {told[2]}, "
                f"replicas {told[3]} at partition epoch {entry.partition_epoch}; the log has leader "
                f"{committed[0]}, leader epoch {committed[1]}, ISR {committed[2]}, replicas {committed[3]}",
                entry,
                captured.offset,
                partition=where,
                broker=entry.broker,
            )

    def _controller_epoch(self, entry: StateObserved, captured: Captured | None, where: str) -> None:
        epochs = self.history.epochs_seen
        if entry.controller_epoch not in epochs and self.log_complete and self.log_is_whole:
            message = f"controller epoch {entry.controller_epoch} is not one of the log's {sorted(epochs)}"
            self.violation("observed-controller-epoch", message, entry, partition=where, broker=entry.broker)
        if captured is not None and captured.offset is not None and entry.controller_epoch < captured.controller_epoch:
            message = (
                f"sent with controller epoch {entry.controller_epoch}, "
                f"older than the epoch {captured.controller_epoch} that committed the state"
            )
            self.violation(
                "observed-controller-epoch", message, entry, captured.offset, partition=where, broker=entry.broker
            )

    def _missing(self, key: Key, entry: Entry, rule: str, verb: str, where: str, count: int = 1) -> None:
        if not self._missing_is_verifiable(key):
            self._unverifiable[entry.kind] += count
            return
        self.checked[entry.kind] += count
        self.violation(
            rule,
            f"{verb} partition epoch {key[2]}, which the log never reached: {self._latest(key)}",
            entry,
            partition=where,
        )

    def _leader_seen(self, key: Key, leader_epoch: int, leader: int, entry: Entry) -> None:
        seen = self.leaders.setdefault((key[0], key[1], leader_epoch), (leader, render_entry(entry)))
        if seen[0] != leader:
            self.violation(
                "split-leadership",
                f"leader epoch {leader_epoch} names leader {seen[0]} in one answer "
                f"and {leader} in another (first: {seen[1]})",
                entry,
                partition=self._where(key),
            )

    # ------------------------------------------------------------------ brokers and topics
    def registered(self, entry: Registered) -> None:
        found = self.history.registrations.get((entry.broker, entry.broker_epoch))
        if found is None:
            if self.log_complete and self.log_is_whole:
                self.checked["registered"] += 1
                self.violation(
                    "registration-lost",
                    f"registered at epoch {entry.broker_epoch}, which no RegisterBrokerRecord of the broker has",
                    entry,
                    broker=entry.broker,
                )
            else:
                self._unverifiable["registered"] += 1
            return
        self.checked["registered"] += 1
        if found[0] != entry.incarnation_id.lower():
            self.violation(
                "registration-lost",
                f"registered incarnation {entry.incarnation_id}; "
                f"the log's record at that epoch is incarnation {found[0]}",
                entry,
                found[1],
                broker=entry.broker,
            )
            return
        kept = self.history.registration_dirs.get((entry.broker, entry.broker_epoch), ())
        asked = tuple(log_dir.lower() for log_dir in entry.log_dirs)
        if asked and sorted(kept) != sorted(asked):
            self.violation(
                "registration-dirs",
                f"registered with LogDirs {list(asked)}; the log's record at that epoch keeps {list(kept)}",
                entry,
                found[1],
                broker=entry.broker,
            )

    def topic_created(self, entry: TopicCreated) -> None:
        topic = self.plan.topic_ids.get(entry.topic_id)
        found = None if topic is None else self.history.topics.get(topic)
        if found is None:
            if self.log_complete and self.log_is_whole:
                self.checked["topic_created"] += 1
                self.violation(
                    "topic-lost",
                    f"topic {entry.topic!r} ({entry.topic_id}) was acknowledged; the log has no TopicRecord of it",
                    entry,
                )
            else:
                self._unverifiable["topic_created"] += 1
            return
        self.checked["topic_created"] += 1
        name, offset, replica_counts = found
        wrong = []
        if name != entry.topic:
            wrong.append(f"name {name!r}")
        if entry.partitions > 0 and len(replica_counts) != entry.partitions:
            wrong.append(f"{len(replica_counts)} partitions, not {entry.partitions}")
        if entry.replication_factor > 0 and any(count != entry.replication_factor for count in replica_counts):
            wrong.append(f"replica counts {sorted(set(replica_counts))}, not {entry.replication_factor}")
        if wrong:
            self.violation(
                "topic-lost", f"the log's topic differs from the acknowledged one: {'; '.join(wrong)}", entry, offset
            )
