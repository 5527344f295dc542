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
- StaleReplay accepted: a violation (`stale-replay-accepted`), with the controlled-shutdown flag it
  wrote where the log has one near it; a rejected stale ControlledShutdown whose flag appears in the
  log next to it, for a broker epoch the fleet never shut down, was applied all the same (checked
  only on a journal whose run finished, so that no ShutdownTracked can be missing).
- RequestProbe (a request the controller must refuse, `broker_sim/model/probes.py`): accepted is
  a violation (`probe-accepted`); refused with another error than semantics.md names for its kind
  and version (`wrong_probe_answer`) too (`probe-answer`). Probe (a leader's ISR expansion on a
  stale view): whether it was admitted is the log's to judge (isr-admission), but a refusal must be
  INELIGIBLE_REPLICA (v2+) / OPERATION_NOT_ATTEMPTED (v0-1), or a stale epoch's (`probe-answer`).
  An answer saying NOT_CONTROLLER at the top level judged nothing, and below it too except for
  "alter-partition-newer-epoch", whose partition's NOT_CONTROLLER (top level NONE) is row b's
  answer; no answer judges nothing either. The kinds whose right answer is NONE
  ("alter-partition-empty": NONE and no topic; "replica-state-no-op": NONE for the partition) are
  never journalled accepted: their errors are judged (`probe-answer`); that a no-op wrote nothing
  is not judged here (the checker's model keeps a replica's offline state, not its directory, so
  a rewrite of the same state shows only as a partition epoch, and another broker's change of the
  partition may fall in the same window): the log rules judge whatever was written
  (`offline-in-isr`, `offline-leader`, `partition-epoch`).
  An accepted "registration-duplicate" is judged against the log, since a correct controller
  accepts one from a broker it fenced meanwhile or whose session ran out: it is `probe-accepted`
  when the answer came within the session timeout of the heartbeat the probe relied on (so the
  controller had heard from the broker within it) and the log fenced the sender's epoch nowhere
  between that heartbeat (less `HEARD_SLACK_MS`: a fence before a heartbeat answered unfenced was
  undone) and the probe's RegisterBrokerRecord (found by its incarnation id); a log that starts at
  a snapshot or was not read whole leaves it unverifiable.
- BadAnswer: a violation (`bad-answer`).
- Where the log cannot tell (it starts at a snapshot after the state, or a problem stopped the
  reading before it), the entry is counted as unverifiable, never as a violation; so is an entry
  naming the zero topic id (a fleet that knew the topic by name only).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping

from broker_sim.journal import (
    BadAnswer,
    Entry,
    PartitionAcked,
    Probe,
    Registered,
    RequestProbe,
    RunEnded,
    ShutdownTracked,
    StaleReplay,
    StateObserved,
    TopicCreated,
)
from protocol.error_codes import ErrorCode

from .events import LogEnd, Subscriber
from .journal_plan import JournalPlan, Key
from .liveness import NS_PER_MS, render_entry
from .rules import BrokerEvent, History, LogRules
from .state import Captured, Model
from .violations import Violation

APPLIED_WINDOW_NS = 2_000 * NS_PER_MS  # a stale replay's effect is looked for this close to it
HEARD_SLACK_MS = 1_000  # fences this long before the heartbeat a duplicate registration relied on count too


class JournalCheck(Subscriber):
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

    # ------------------------------------------------------------------ stale replays and bad answers
    def stale_replay(self, entry: StaleReplay) -> None:
        self.checked["stale_replay"] += 1
        nearby = self._shutdown_flags_near(entry)
        records = tuple(event.rendering for event in nearby[:1])
        offset = nearby[0].offset if nearby else None
        if entry.accepted:
            self.violation(
                "stale-replay-accepted",
                f"{entry.api} v{entry.api_version} ({entry.reason}) built with broker epoch "
                f"{entry.stale_broker_epoch} was accepted (errors {entry.errors}) "
                f"by the incarnation of epoch {entry.current_broker_epoch}",
                entry,
                offset,
                broker=entry.broker,
                records=records,
            )
        elif (wrong := wrong_stale_answer(entry)) is not None:
            self.violation(
                "stale-replay-answer",
                f"{entry.api} v{entry.api_version} ({entry.reason}) built with broker epoch "
                f"{entry.stale_broker_epoch} was answered {entry.errors}: {wrong}",
                entry,
                broker=entry.broker,
            )
        elif nearby and self._run_finished() and not self._shutdown_started(entry):
            self.violation(
                "stale-replay-accepted",
                f"{entry.api} ({entry.reason}) was answered {entry.errors}, yet the log flags the incarnation "
                f"of epoch {entry.current_broker_epoch} in controlled shutdown next to it, "
                "and the fleet never shut it down",
                entry,
                offset,
                broker=entry.broker,
                records=records,
            )

    def _shutdown_flags_near(self, entry: StaleReplay) -> list[BrokerEvent]:
        if entry.api != "ControlledShutdown":
            return []
        events = self.history.shutdowns.get((entry.broker, entry.current_broker_epoch), [])
        return [event for event in events if abs(event.timestamp_ms * NS_PER_MS - entry.wall_ns) <= APPLIED_WINDOW_NS]

    def _run_finished(self) -> bool:
        return any(isinstance(e, RunEnded) and e.finished for e in self.plan.lifecycle)

    def _shutdown_started(self, entry: StaleReplay) -> bool:
        started = self.shutdowns_started.get((entry.broker, entry.current_broker_epoch))
        return started is not None and started <= entry.wall_ns + APPLIED_WINDOW_NS

    # ------------------------------------------------------------------ probes
    def request_probe(self, entry: RequestProbe) -> None:
        if not entry.errors or entry.errors[0] == ErrorCode.NOT_CONTROLLER:
            return
        if entry.probe != NEWER_EPOCH_PROBE and ErrorCode.NOT_CONTROLLER in entry.errors:
            return
        named = _probe_named(entry)
        if entry.accepted and entry.probe == DUPLICATE_REGISTRATION_PROBE:
            self._accepted_duplicate(entry, named)
            return
        self.checked["request_probe"] += 1
        if entry.accepted:
            self.violation(
                "probe-accepted",
                f"{entry.api} v{entry.api_version} probe {entry.probe} ({named}) was accepted (errors {entry.errors})",
                entry,
                broker=entry.broker,
            )
        elif (wrong := wrong_probe_answer(entry)) is not None:
            self.violation(
                "probe-answer",
                f"{entry.api} v{entry.api_version} probe {entry.probe} ({named}) was answered {entry.errors}: {wrong}",
                entry,
                broker=entry.broker,
            )

    def _accepted_duplicate(self, entry: RequestProbe, named: str) -> None:
        """See the module rules: a correct controller accepts another incarnation only once the
        sender's session is gone (fenced first, or not heard from within the session timeout)."""
        after = entry.detail.get("answered_ms_after_heard")
        timeout = entry.detail.get("session_timeout_ms")
        if not isinstance(after, int) or not isinstance(timeout, int) or after >= timeout:
            self._unverifiable["request_probe"] += 1
            return
        incarnation = str(entry.detail.get("incarnation_id", "")).lower()
        offsets = [
            offset
            for (broker, _), (found, offset) in self.history.registrations.items()
            if broker == entry.broker and found == incarnation and offset is not None
        ]
        heard_ms = entry.wall_ns // NS_PER_MS - after - HEARD_SLACK_MS  # a fence before it was undone since
        fences = [
            event.offset
            for event in self.history.fences.get((entry.broker, entry.broker_epoch), [])
            if event.timestamp_ms >= heard_ms
        ]
        at = min(offsets) if offsets else None
        if any(at is None or offset < at for offset in fences):
            self.checked["request_probe"] += 1  # fenced first: accepted rightly
            return
        if not (self.log_complete and self.log_is_whole):
            self._unverifiable["request_probe"] += 1
            return
        self.checked["request_probe"] += 1
        where = "no RegisterBrokerRecord of it" if at is None else f"its RegisterBrokerRecord at offset {at}"
        self.violation(
            "probe-accepted",
            f"{entry.api} v{entry.api_version} probe {entry.probe} ({named}) was accepted {after} ms after the "
            f"broker's last heartbeat was sent (session timeout {timeout} ms), and the log has {where} "
            f"with no fence of broker epoch {entry.broker_epoch} before it: another incarnation while "
            "the current one's session was valid",
            entry,
            at,
            broker=entry.broker,
        )

    def isr_probe(self, entry: Probe) -> None:
        if len(entry.errors) < 2 or ErrorCode.NOT_CONTROLLER in entry.errors:
            return
        self.checked["probe"] += 1
        wrong = wrong_isr_probe_answer(entry.api_version, entry.errors)
        if wrong is not None:
            self.violation(
                "probe-answer",
                f"AlterPartition v{entry.api_version} adding follower {entry.follower} ({entry.why}, broker epoch "
                f"{entry.member_epoch}) was answered {entry.errors}: {wrong}",
                entry,
                broker=entry.broker,
            )

    def bad_answer(self, entry: BadAnswer) -> None:
        self.checked["bad_answer"] += 1
        self.violation(
            "bad-answer",
            f"{entry.api} v{entry.api_version} (correlation id {entry.correlation_id}): {entry.reason}",
            entry,
            broker=entry.broker,
        )


#: what a partition of a stale AlterPartition may be answered (semantics.md, rows c and e), besides
#: an unknown topic (deleted since: UNKNOWN_TOPIC_ID for v2+, UNKNOWN_TOPIC_OR_PARTITION for v0-1)
STALE_PARTITION_ANSWERS = {
    "old-leader-epoch": frozenset({ErrorCode.FENCED_LEADER_EPOCH}),
    "old-partition-epoch": frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION}),
}
GONE = frozenset({ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


def wrong_stale_answer(entry: StaleReplay) -> str | None:
    """Why a rejected stale replay's answer is not the one semantics.md names, or None.

    The fleet sends a replay only once it knows its epochs are stale, and the controller's state can
    only be newer than what the fleet knew, so the check that must fire is known:
    - previous-incarnation: the request's broker epoch is no longer registered: the top-level (or
      ControlledShutdown's, BrokerHeartbeat's) error is STALE_BROKER_EPOCH;
    - old-leader-epoch: a newer leader epoch was committed: FENCED_LEADER_EPOCH (row c comes before
      "not the leader", row d, and "older partition epoch", row e);
    - old-partition-epoch: the change was applied: INVALID_UPDATE_VERSION, or FENCED_LEADER_EPOCH
      when the leader changed since.
    Where the broker bounced since, STALE_BROKER_EPOCH at the top level is right for every reason."""
    if not entry.errors or entry.accepted:
        return None
    top, partitions = entry.errors[0], entry.errors[1:]
    if top == ErrorCode.STALE_BROKER_EPOCH:
        return None
    if entry.reason == "previous-incarnation":
        return "expected STALE_BROKER_EPOCH (77): the request's broker epoch belongs to an earlier incarnation"
    allowed = STALE_PARTITION_ANSWERS.get(entry.reason)
    if allowed is None or entry.api != "AlterPartition":
        return None
    if top != ErrorCode.NONE:
        return f"expected a per-partition rejection, not the top-level error {top}"
    wrong = [code for code in partitions if code not in allowed and code not in GONE]
    if wrong:
        names = " or ".join(f"{code.name} ({int(code)})" for code in sorted(allowed))
        return f"expected {names} for every partition, got {wrong}"
    return None


# ---------------------------------------------------------------------- request probes
#: what a partition of an AlterPartition probe built on the epochs the fleet knew may be answered:
#: the row it breaks (INVALID_REQUEST: rows d, f, g and a bad LeaderRecoveryState byte), or a check
#: before it that newer epochs at the controller fire first: row c (a newer leader epoch: the
#: leader changed), row e (a newer partition epoch; after row d, before rows f and g); besides an
#: unknown topic (deleted since: GONE). A follower's probe never meets row e: one leader epoch has
#: one leader, so at the epoch it named the leader is another broker (row d), and a newer one is
#: row c, whoever leads
REFUSED_ISR = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION})
REFUSED_FOLLOWER = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.FENCED_LEADER_EPOCH})
ISR_PROBES = frozenset(
    {
        "non-replica",
        "duplicate",
        "negative-id",
        "without-leader",
        "recovery-rollback",
        "recovering-isr",
        "recovery-byte",
    }
)
NEWER_EPOCH_PROBE = "alter-partition-newer-epoch"
DUPLICATE_REGISTRATION_PROBE = "registration-duplicate"
EMPTY_PROBE = "alter-partition-empty"
#: probes answered at the top level only: the one right error
TOP_LEVEL_PROBES = {
    DUPLICATE_REGISTRATION_PROBE: ErrorCode.DUPLICATE_BROKER_REGISTRATION,
    "heartbeat-unregistered": ErrorCode.STALE_BROKER_EPOCH,
    "shutdown-unregistered": ErrorCode.BROKER_NOT_AVAILABLE,
    "registration-cluster-id": ErrorCode.INCONSISTENT_CLUSTER_ID,
    "registration-negative-id": ErrorCode.INVALID_REQUEST,
    "replica-state-unknown-state": ErrorCode.UNKNOWN_REPLICA_STATE,
    "alter-partition-unregistered": ErrorCode.STALE_BROKER_EPOCH,  # checked before any partition
    "replica-state-unregistered": ErrorCode.STALE_BROKER_EPOCH,
}


def probe_partition_answers(probe: str, version: int) -> frozenset[int] | None:
    """The errors each partition of a partition-level probe may be answered (see `wrong_probe_answer`);
    None for a probe answered at the top level, or one this checker does not know (a newer fleet's)."""
    unknown_topic = ErrorCode.UNKNOWN_TOPIC_ID if version >= 2 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if probe == "follower":
        return REFUSED_FOLLOWER | GONE
    if probe in ISR_PROBES:
        return REFUSED_ISR | GONE
    if probe == "unknown-topic":
        return frozenset({unknown_topic})
    if probe == "unknown-partition":
        return frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}) | GONE
    if probe == "replica-state-unknown-topic":  # AlterReplicaState: v1 names topics by id
        return frozenset({ErrorCode.UNKNOWN_TOPIC_ID if version >= 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
    if probe == "replica-state-unknown-partition":  # or the topic deleted since, by id (v1)
        deleted = {ErrorCode.UNKNOWN_TOPIC_ID} if version >= 1 else set()
        return frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, *deleted})
    if probe == NEWER_EPOCH_PROBE:  # row b comes first: no newer epochs of the controller's reach it
        return frozenset({ErrorCode.NOT_CONTROLLER}) | GONE
    if probe == "replica-state-no-op":  # already in that state: NONE (or the topic deleted since)
        return frozenset({ErrorCode.NONE}) | GONE
    return None


def wrong_probe_answer(entry: RequestProbe) -> str | None:
    """Why a refused request probe's answer is not the one semantics.md names, or None.

    The fleet builds a probe from what it knows; the controller's state may only be newer: so a
    probe on a partition's epochs may meet a newer leader epoch (FENCED_LEADER_EPOCH, row c, which
    comes before "not the leader", row d) or, the leader's, a newer partition epoch
    (INVALID_UPDATE_VERSION, row e, before rows f and g), or a deleted topic; nothing else, and row
    b (NOT_CONTROLLER) before all of them for epochs far above the controller's. A probe
    on no epochs (an unknown topic, an unregistered broker id, a wrong cluster id, an unknown
    replica state) has exactly one right answer, by version where the versions differ (v2+
    AlterPartition and v1 AlterReplicaState name topics by id: UNKNOWN_TOPIC_ID; by name:
    UNKNOWN_TOPIC_OR_PARTITION)."""
    if not entry.errors or entry.accepted:
        return None
    top, partitions = entry.errors[0], entry.errors[1:]
    expected_top = TOP_LEVEL_PROBES.get(entry.probe)
    if expected_top is not None:
        if top != expected_top:
            return f"expected {_names([expected_top])}"
        return None
    if entry.probe == "partition-twice":
        return _wrong_twice(top, partitions, entry.detail.get("times_named", 2), entry.detail.get("answer_topics"))
    if entry.probe == EMPTY_PROBE:
        topics = entry.detail.get("answer_topics", 0)
        if top != ErrorCode.NONE or partitions or topics:
            return f"expected an empty success (NONE, no topic), got {topics} topics"
        return None
    allowed = probe_partition_answers(entry.probe, entry.api_version)
    if allowed is None:
        return None
    if top != ErrorCode.NONE:
        return f"expected a per-partition rejection ({_names(allowed)}), not the top-level error {top}"
    wrong = [code for code in partitions if code not in allowed]
    if not partitions or wrong:
        return f"expected {_names(allowed)} for the partition, got {partitions or 'no partition'}"
    return None


def _wrong_twice(top: int, partitions: list[int], times: int, topics: int | None) -> str | None:
    """A partition named `times` times in one topic entry (README, What it decides): the first
    naming changes nothing (NONE, or the error of epochs that moved since), each later one is
    INVALID_REQUEST (or all the deleted topic's error), every naming answered, in one topic entry
    as asked, whether the controller decided it at once or piece by piece (`topics`: the answer's
    topic entries, None where the journal does not say)."""
    first = frozenset({ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION}) | GONE
    later = frozenset({ErrorCode.INVALID_REQUEST}) | GONE
    if top != ErrorCode.NONE:
        return f"expected a per-partition answer, not the top-level error {top}"
    if topics is not None and topics != 1:
        return f"expected the {times} namings answered in the one topic entry asked, got {topics} topic entries"
    if len(partitions) != times or partitions[0] not in first or any(code not in later for code in partitions[1:]):
        return f"expected each naming after the first of {times} answered {_names(later)}, got {partitions}"
    return None


def wrong_isr_probe_answer(version: int, errors: list[int]) -> str | None:
    """Why a leader's ISR expansion on a stale view of a follower (a Probe entry: top level, then the
    partition's error) was refused with the wrong error, or None: an ineligible member is
    INELIGIBLE_REPLICA for v2+, OPERATION_NOT_ATTEMPTED for v0-1 (row h), unless newer epochs fired
    row c or e first, or the topic is gone; NONE is the log's to judge (the follower may have become
    eligible before the controller decided)."""
    top, partitions = errors[0], errors[1:]
    ineligible = ErrorCode.INELIGIBLE_REPLICA if version >= 2 else ErrorCode.OPERATION_NOT_ATTEMPTED
    allowed = frozenset({ErrorCode.NONE, ineligible, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION})
    if top != ErrorCode.NONE:
        return f"expected a per-partition answer, not the top-level error {top}"
    wrong = [code for code in partitions if code not in allowed | GONE]
    if wrong:
        return f"expected {_names(allowed - {ErrorCode.NONE})} (or NONE, judged from the log), got {wrong}"
    return None


def _names(codes: Iterable[int]) -> str:
    return " or ".join(f"{ErrorCode(code).name} ({int(code)})" for code in sorted(codes))


def _probe_named(entry: RequestProbe) -> str:
    """What the probe's request named, on one line."""
    return ", ".join(f"{key} {value}" for key, value in entry.detail.items()) or "as built"
