"""Answers the fleet acted on, against the log: an unfencing the brokers were told of, and
the admin's own topic deletions, were written as answered; its own creations were refused only for
a reason the log shows.

Rules (ids in violations.RULES):
- `unfence-unwritten`: a broker answered unfenced (`UnfencedSeen`, broker and broker epoch) was
  unfenced in the log by then: some batch whose timestamp is at most `WINDOW_SLACK_MS` after the
  answer ends with that broker registered at that epoch and not fenced (or the log's base snapshot
  has it so). The controller answers a heartbeat after committing what it decided, so a correct one
  always has; one that answers unfenced without writing it leaves the brokers fenced in the log
  (every creation then refused for want of active brokers: a run that creates nothing, and whose
  log alone would look clean). Weaker than "unfenced while the request was in flight" on purpose:
  never a false positive.
- `delete-answer`: the admin's own DeleteTopics of a topic (`DeleteAnswered`) is judged by whether
  the log held the topic (by id when the admin named it by id, else by name) at some time while the
  request was in flight: at the end of some batch whose timestamp lies within `WINDOW_SLACK_MS` of
  [sent, answered], or at the end of the last batch before that window (the state then).
  NONE: the topic was gone at some such time (a RemoveTopicRecord, or already gone).
  UNKNOWN_TOPIC_ID (by id) / UNKNOWN_TOPIC_OR_PARTITION (by name): the same (semantics.md names no
  other refusal for a valid deletion). NOT_CONTROLLER (the admin's retries ran out), an authorizer's
  refusal and a deletion without an answer judge nothing; any other error, or an answer without the
  topic, is a violation.
- `create-refused`: the admin's own CreateTopics of one of its topics (`CreateAnswered`: manual
  assignments over the brokers the controller listed, or a factor for the controller to place,
  never more partitions than the controller's default bound) refused with an error semantics.md
  allows only in a state the log must show at some time in flight (as above): TOPIC_ALREADY_EXISTS
  while a topic of that name exists; INVALID_REPLICATION_FACTOR / INVALID_REPLICA_ASSIGNMENT while
  a broker the assignment names is not active (conservative: the controller refuses for a
  partition none of whose replicas is active, or for an unregistered one); for a placed topic,
  INVALID_REPLICATION_FACTOR while fewer brokers are active than the factor (the default, -1:
  while none is, whatever the controller's default). Any other error is a
  violation, but NOT_CONTROLLER, an authorizer's and POLICY_VIOLATION (a lower configured
  bound), which judge nothing. Together
  with `unfence-unwritten` a run whose topics were never created fails: either the refusal is
  explained by brokers the log never unfenced, and the brokers were told they were, or it is not.
- History: a log that starts at a base snapshot (its older segments deleted) holds only the
  result of what happened before its first batch: an unfencing answered before then that the
  base snapshot does not show (never, or only later: the broker may have been unfenced and fenced
  again in the deleted past), and a window that opened before that batch, are not judged
  (counted as `unfence_answer_before_history` and `answer_window_before_history`).
- Clock: the batch timestamps are the controller's wall clock, the journal's the fleet's, on one
  machine; the slack covers the readings' order. A creation's window opens only
  `CREATION_START_SLACK_MS` before it was sent: the controller decides after it receives the
  request, on a state holding every batch it wrote before (a batch is stamped as it is applied),
  and the admin sends its topics right after its brokers were answered unfenced, so a wider slack
  would take the state before the unfencing as the reason for the refusal. (The state of the last
  batch before the window is looked at all the same.)
- Cost: a watch per unfencing (dropped once the log shows it) and a window per deletion (open only
  while the log's clock is inside it); nothing when the journal has neither.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from broker_sim.journal import CreateAnswered, DeleteAnswered, Entry, UnfencedSeen
from protocol.error_codes import ErrorCode

from .events import LogEnd, SnapshotRecords, Subscriber
from .liveness import NS_PER_MS
from .log import Batch, SnapshotFile
from .rendering import render_entry
from .rules import LogRules
from .state import Model, Partition
from .violations import Violation

if TYPE_CHECKING:
    from .journal_plan import JournalPlan

WINDOW_SLACK_MS = 500
#: a creation's window opens this much before it was sent (see the module rules)
CREATION_START_SLACK_MS = 10
UNAUTHORIZED = frozenset({ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED})


class Window:
    """One admin request's time in flight, and whether the log was seen, then, in a state that
    justifies its answer (`gone`: for a deletion, without its topic; for a creation, one that
    explains its refusal)."""

    __slots__ = ("end_ms", "entry", "gone", "start_ms", "topic_id")

    def __init__(self, entry: DeleteAnswered | CreateAnswered) -> None:
        self.entry = entry
        before = CREATION_START_SLACK_MS if isinstance(entry, CreateAnswered) else WINDOW_SLACK_MS
        self.start_ms = entry.sent_wall_ns // NS_PER_MS - before
        self.end_ms = entry.wall_ns // NS_PER_MS + WINDOW_SLACK_MS
        by_id = isinstance(entry, DeleteAnswered) and entry.by_id and entry.topic_id
        self.topic_id = uuid.UUID(entry.topic_id).int if isinstance(entry, DeleteAnswered) and by_id else None
        self.gone = False

    def look(self, model: Model) -> None:
        if self.gone:
            return
        entry = self.entry
        if isinstance(entry, CreateAnswered):
            self.gone = refusal_explained(model, entry)
            return
        present = model.topics if self.topic_id is not None else model.names
        self.gone = (self.topic_id if self.topic_id is not None else entry.topic) not in present


def refusal_explained(model: Model, entry: CreateAnswered) -> bool:
    """Does the log's state explain the creation's refusal? TOPIC_ALREADY_EXISTS: the name is taken;
    INVALID_REPLICATION_FACTOR / INVALID_REPLICA_ASSIGNMENT: a broker the assignment names is not
    active (unregistered, fenced or shutting down); for a topic the controller places,
    INVALID_REPLICATION_FACTOR: fewer brokers active than the factor asked. Any other error:
    nothing does."""
    if entry.error == ErrorCode.TOPIC_ALREADY_EXISTS:
        return entry.topic in model.names
    if entry.replication_factor != 0:  # placed; -1: the controller's default factor, at least 1
        if entry.error != ErrorCode.INVALID_REPLICATION_FACTOR:
            return False
        return sum(1 for broker in model.brokers if model.is_active(broker)) < max(1, entry.replication_factor)
    if entry.error in (ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.INVALID_REPLICA_ASSIGNMENT):
        return not all(model.is_active(broker) for broker in entry.replicas)
    return False


class AnswerCheck(Subscriber):
    """Judges the journal's unfencings and the admin's deletions against the log (see the module rules)."""

    name = "answers"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.model: Model = image.model
        self.unfenced: dict[tuple[int, int], list[UnfencedSeen]] = {}  # (broker, epoch) -> entries
        self.unfenced_at: dict[tuple[int, int], int] = {}  # (broker, epoch) -> first batch ms it was so
        self.pending: list[Window] = []  # deletions not yet in flight on the log's clock (by start)
        self.open: list[Window] = []
        self.judged: list[Window] = []
        self.checked: Counter[str] = Counter()

    # ------------------------------------------------------------------ events
    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, UnfencedSeen):
            self.unfenced.setdefault((entry.broker, entry.broker_epoch), []).append(entry)
        elif isinstance(entry, DeleteAnswered) or (isinstance(entry, CreateAnswered) and _judged_creation(entry)):
            self.pending.append(Window(entry))

    def on_journal_end(self, plan: JournalPlan) -> None:
        self.pending.sort(key=lambda window: window.start_ms)

    def follows(self, hook: str) -> bool:
        if hook in ("on_batch_end", "on_base_snapshot", "on_log_end"):
            return bool(self.unfenced) or bool(self.pending or self.open or self.judged)
        if hook == "on_time":
            return bool(self.pending)
        return super().follows(hook)

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        self._watch_unfenced(-(1 << 62))

    def on_time(self, timestamp_ms: int) -> None:
        self._advance(timestamp_ms)

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        if len(self.unfenced_at) < len(self.unfenced):
            self._watch_unfenced(batch.timestamp_ms)
        for window in self.open:
            window.look(self.model)

    def on_log_end(self, end: LogEnd) -> None:
        self._advance(1 << 62)
        for key, entries in self.unfenced.items():
            self._judge_unfenced(key, entries)
        for window in self.judged:
            self._judge(window)

    def counts(self) -> Mapping[str, int]:
        return dict(self.checked)

    # ------------------------------------------------------------------ tracking
    def _watch_unfenced(self, at_ms: int) -> None:
        for key in self.unfenced:
            if key in self.unfenced_at:
                continue
            broker = self.model.brokers.get(key[0])
            if broker is not None and broker.epoch == key[1] and not broker.fenced:
                self.unfenced_at[key] = at_ms

    def _advance(self, until_ms: int) -> None:
        """The log's clock reached `until_ms` (the state is the one before it): open the windows that
        began by then, look at the state, judge the windows that ended before it."""
        if not self.open and (not self.pending or self.pending[0].start_ms > until_ms):
            return
        while self.pending and self.pending[0].start_ms <= until_ms:
            self.open.append(self.pending.pop(0))
        for window in self.open:
            window.look(self.model)
        self.judged.extend(window for window in self.open if window.end_ms < until_ms)
        self.open = [window for window in self.open if window.end_ms >= until_ms]

    # ------------------------------------------------------------------ judging
    def _judge_unfenced(self, key: tuple[int, int], entries: list[UnfencedSeen]) -> None:
        at = self.unfenced_at.get(key)
        for entry in entries:
            answered_ms = entry.wall_ns // NS_PER_MS
            held = at is not None and at <= answered_ms + WINDOW_SLACK_MS
            # an answer before the log's history: its unfencing may lie in the deleted past, and a
            # fence there too (the base snapshot holds the broker fenced, the log unfences it again)
            if not held and self.model.before_history(answered_ms + WINDOW_SLACK_MS):
                self.checked["unfence_answer_before_history"] += 1
                continue
            self.checked["unfence_answer"] += 1
            if held:
                continue
            when = "never" if at is None else f"only at {at} ms, {at - answered_ms} ms after the answer"
            self._violation(
                "unfence-unwritten",
                f"broker {key[0]} (broker epoch {key[1]}) was answered unfenced at {answered_ms} ms; "
                f"the log unfenced it {when}",
                entry,
                broker=key[0],
            )

    def _judge(self, window: Window) -> None:
        if self.model.before_history(window.start_ms):
            self.checked["answer_window_before_history"] += 1
            return
        if isinstance(window.entry, CreateAnswered):
            self._judge_creation(window, window.entry)
        else:
            self._judge_deletion(window, window.entry)

    def _judge_creation(self, window: Window, entry: CreateAnswered) -> None:
        self.checked["create_refusal"] += 1
        if window.gone:
            return
        if entry.error == ErrorCode.TOPIC_ALREADY_EXISTS:
            why = "the log held no topic of that name while the request was in flight"
        elif entry.error in (ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.INVALID_REPLICA_ASSIGNMENT):
            why = f"every broker it named ({entry.replicas}) was active in the log while the request was in flight"
        else:
            why = "semantics.md names no such refusal of a valid creation"
        self._violation(
            "create-refused",
            f"CreateTopics v{entry.api_version} of the admin's topic {entry.topic} was refused {entry.error}: {why}",
            entry,
        )

    def _judge_deletion(self, window: Window, entry: DeleteAnswered) -> None:
        error = entry.error
        if error in (ErrorCode.NOT_CONTROLLER, *UNAUTHORIZED):
            return
        self.checked["delete_answer"] += 1
        named = f"topic {entry.topic}" + (f" (id {entry.topic_id})" if window.topic_id is not None else "")
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if window.topic_id is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if error in (ErrorCode.NONE, unknown):
            if window.gone:
                return
            why = "the log held the topic throughout the request's flight"
            why += ": nothing was deleted" if error == ErrorCode.NONE else ": it was not unknown"
        elif error == -1:
            why = "the answer did not name the topic"
        else:
            why = f"semantics.md names NONE (or {unknown.name} for a topic already gone), not {error}"
        self._violation(
            "delete-answer",
            f"DeleteTopics v{entry.api_version} of the admin's {named} was answered {error}: {why}",
            entry,
        )

    def _violation(self, rule: str, message: str, entry: Entry, broker: int | None = None) -> None:
        if not self.sink.count_only(rule):
            self.sink.add(Violation(rule, message, journal=render_entry(entry), broker=broker))


def _judged_creation(entry: CreateAnswered) -> bool:
    """A refusal to judge: not NONE (`topic-lost` judges those), not NOT_CONTROLLER (the admin's
    retries ran out), not an authorizer's, not POLICY_VIOLATION (a controller's configured bound
    may be lower than the fleet's requests)."""
    skipped = (ErrorCode.NONE, ErrorCode.NOT_CONTROLLER, ErrorCode.POLICY_VIOLATION, *UNAUTHORIZED)
    return entry.error not in skipped
