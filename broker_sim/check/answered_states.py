"""Answers that promise a partition's state, against the log: the admin's own PREFERRED elections
(`ElectAnswered`, chaos's) and the brokers' AlterReplicaState reports (`ReplicaStateAnswered`).
Each partition answered NONE (or, for an election, ELECTION_NOT_NEEDED) names a state the log must
show at the end of some batch stamped within the request's flight: from its send to its answer
plus `WINDOW_SLACK_MS` (the controller appends before it answers; no slack before the send: a
batch is stamped as it is applied), or, where the answer says the state was already there, from
`WINDOW_SLACK_MS` before the send.

Rules (ids in violations.RULES):
- `preferred-answer`: a partition answered NONE is led by its preferred replica (the first of its
  replicas): the election was written; one answered ELECTION_NOT_NEEDED was led by it (the
  controller saw it lead). Other answers judge nothing here: the partition rules judge every
  leader the log shows, and an election not made changes nothing.
- `replica-state-answer`: a replica reported OFFLINE and answered NONE is offline in the log (its
  directory LOST: marked, or already so); one reported ONLINE and answered NONE is not (its mark
  cleared, or never set).
- Not judged: an answer with NOT_CONTROLLER anywhere or a top-level error, no answer, an UNCLEAN
  election (the admin's probes judge those), and a partition the log never held or a flight before
  the log's history (counted unverifiable).
- Clock: the batch timestamps are the controller's wall clock, the journal's the fleet's, on one
  machine (the slack covers the readings' order); in the simulator, one clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from broker_sim.journal import ElectAnswered, Entry, ReplicaStateAnswered
from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.messages.elect_leaders import PREFERRED

from .admin_probe_rules import WINDOW_SLACK_MS, held_between, note_change
from .events import LogEnd, Subscriber
from .liveness import NS_PER_MS
from .log import Batch
from .rendering import render_entry
from .rules import LogRules
from .state import Model, Partition
from .violations import Violation

LEADS = "preferred leads"
OFFLINE_MARK = "offline"
ONLINE_MARK = "online"


class Watched(NamedTuple):
    topic: str
    partition: int
    state: str  # LEADS, OFFLINE_MARK, ONLINE_MARK
    broker: int  # the replica's broker (OFFLINE_MARK, ONLINE_MARK); -1 for LEADS


class Promise(NamedTuple):
    """One partition's answered state: the rule, what to watch, its window (ms), and the entry."""

    rule: str
    watched: Watched
    start_ms: int
    end_ms: int
    said: str
    entry: ElectAnswered | ReplicaStateAnswered


def promises(entry: Entry) -> list[Promise]:
    """The states `entry`'s answers promise (see the module rules); none for another kind."""
    if not isinstance(entry, (ElectAnswered, ReplicaStateAnswered)):
        return []
    sent, end = entry.sent_wall_ns // NS_PER_MS, entry.wall_ns // NS_PER_MS + WINDOW_SLACK_MS
    if isinstance(entry, ElectAnswered):
        errors = {entry.error, *(error for _, _, error in entry.results)}
        if entry.election_type != PREFERRED or ErrorCode.NOT_CONTROLLER in errors or entry.error:
            return []
        # NONE: the election's batch comes after the send; NOT_NEEDED: the leader may predate it
        windows = {
            ErrorCode.NONE: ("elected", sent),
            ErrorCode.ELECTION_NOT_NEEDED: ("ELECTION_NOT_NEEDED", sent - WINDOW_SLACK_MS),
        }
        found = []
        for topic, partition, error in entry.results:
            if error in windows:
                said, start = windows[error]
                found.append(Promise("preferred-answer", Watched(topic, partition, LEADS, -1), start, end, said, entry))
        return found
    if not entry.errors or entry.errors[0] != ErrorCode.NONE or entry.new_state not in (OFFLINE, ONLINE):
        return []
    state = OFFLINE_MARK if entry.new_state == OFFLINE else ONLINE_MARK
    return [
        Promise("replica-state-answer", Watched(topic, partition, state, entry.broker), sent, end, state, entry)
        for (topic, partition), error in zip(entry.replicas, entry.errors[1:], strict=False)
        if error == ErrorCode.NONE
    ]


def holds(watched: Watched, partition: Partition) -> bool:
    if watched.state == LEADS:
        return bool(partition.replicas) and partition.leader == partition.replicas[0]
    offline = watched.broker in partition.offline
    return offline if watched.state == OFFLINE_MARK else not offline


class AnsweredStates(Subscriber):
    """Judges the answers that promise a partition's state (see the module rules)."""

    name = "answered-states"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.model: Model = image.model
        self.promises: list[Promise] = []
        #: per watched state: (batch timestamp, the state holds at the batch's end) at each change
        self.watched: dict[Watched, list[tuple[int, bool]]] = {}
        self.checked: Counter[str] = Counter()
        self._unverifiable: Counter[str] = Counter()

    def on_journal_entry(self, entry: Entry) -> None:
        for promise in promises(entry):
            self.promises.append(promise)
            self.watched.setdefault(promise.watched, [])

    def follows(self, hook: str) -> bool:
        if hook in ("on_batch_end", "on_log_end"):
            return bool(self.promises)
        return super().follows(hook)

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        for watched, transitions in self.watched.items():
            partition = self.model.partition_named(watched.topic, watched.partition)
            if partition is not None:
                note_change(transitions, batch.timestamp_ms, holds(watched, partition))

    def on_log_end(self, end: LogEnd) -> None:
        for promise in self.promises:
            self.judge(promise)

    def counts(self) -> Mapping[str, int]:
        return dict(self.checked)

    def unverifiable(self) -> Mapping[str, int]:
        return self._unverifiable

    def judge(self, promise: Promise) -> None:
        counter = promise.rule.replace("-", "_")
        transitions = self.watched.get(promise.watched)
        if not transitions or self.model.before_history(promise.start_ms):
            self._unverifiable[counter] += 1
            return
        self.checked[counter] += 1
        if held_between(transitions, promise.start_ms, promise.end_ms):
            return
        watched, entry = promise.watched, promise.entry
        where = f"{watched.topic}-{watched.partition}"
        if isinstance(entry, ElectAnswered):
            message = (
                f"ElectLeaders v{entry.api_version} PREFERRED answered {where} {promise.said}, but the log never "
                f"has its preferred replica lead within the request's flight (+{WINDOW_SLACK_MS} ms)"
            )
        else:
            message = (
                f"AlterReplicaState v{entry.api_version} {promise.said.upper()} of broker {watched.broker}'s replica "
                f"of {where} was answered NONE, but the log never has that replica {promise.said} within the "
                f"request's flight (+{WINDOW_SLACK_MS} ms)"
            )
        if not self.sink.count_only(promise.rule):
            broker = None if watched.broker < 0 else watched.broker
            self.sink.add(Violation(promise.rule, message, partition=where, broker=broker, journal=render_entry(entry)))
