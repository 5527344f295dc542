"""The admin's probes against the log: a request a correct controller must refuse
(`broker_sim.model.admin_probes`, journalled as `AdminProbe`; this module keeps its own table of the
right answers, `EXPECTED`, as `journal_rules` does for the brokers' probes) was refused, with the error
semantics.md names.

Rules (ids in violations.RULES):
- An entry whose answer says NOT_CONTROLLER anywhere, or that got no answer, judges nothing; nor
  does one refused TOPIC_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED (a controller with
  an authorizer that does not let the fleet's principal in: the authorizer is checked before the
  probe's rule; counted in `admin_probe_unauthorized`).
- Accepted (NONE at the top level and for the topic or partition) is `probe-accepted`, but for
  the UNCLEAN kinds ("elect-unclean-led", "elect-unclean-leaderless") when the partition was
  leaderless at some time the request was in flight (below): then an unclean election is the
  right answer, and the log must show it: the partition led again by a batch within
  `WINDOW_SLACK_MS` of the flight (`unclean-answer`: answered elected, nothing elected). For a
  creation the violation names the TopicRecords of that name the log holds (a taken name's
  second one, a fresh name's), at the last one's offset; the log's own rules judge them as any
  record (`unknown-topic` for a taken name, `replica-set` for an unregistered replica or too
  many, `isr-shape` for an empty list).
- Refused with another error than `expected` gives for the kind (and, for "delete-unknown", how
  it named the topic; ElectLeaders: per partition, the top level NONE) is `probe-answer`; an
  answer without the topic or partition (or with more than the one the probe named) is too.
  The UNCLEAN kinds may also be ELIGIBLE_LEADERS_NOT_AVAILABLE when the partition was
  leaderless with no replica eligible (registered, unfenced, not in controlled shutdown, its
  replica online) at some time from the request's send to its answer (+ the slack; no slack
  before the send: a batch is stamped as it is applied): not while a replica could have led.
- "Leaderless while in flight": at the end of some batch whose timestamp lies within
  `WINDOW_SLACK_MS` of the request's [sent, answered] (or at the end of the last batch before
  that window), the log has the partition with no leader. The batch timestamps are the
  controller's wall clock, the journal's the fleet's, on one machine; the slack covers the clock
  readings' order. Where the log cannot tell (it does not hold the partition), the entry is
  counted as unverifiable, never a violation.
- A kind this checker does not know (a newer fleet's) judges nothing; counted in
  `admin_probe_unknown`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from broker_sim.journal import AdminProbe, Entry
from protocol.error_codes import ErrorCode
from protocol.records.metadata import NO_LEADER

from .events import LogEnd, Subscriber
from .liveness import NS_PER_MS
from .log import Batch
from .rendering import render_entry
from .rules import LogRules
from .state import Model, Partition
from .violations import Violation

WINDOW_SLACK_MS = 500
UNAUTHORIZED = frozenset({ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED})
Watched = tuple[str, int]  # (topic name, partition)
DELETE_UNKNOWN = "delete-unknown"
ELECT_UNCLEAN_LED = "elect-unclean-led"
ELECT_UNCLEAN_LEADERLESS = "elect-unclean-leaderless"
#: the kinds that ask for an unclean election: right to elect when the partition was leaderless
UNCLEAN_KINDS = frozenset({ELECT_UNCLEAN_LED, ELECT_UNCLEAN_LEADERLESS})
#: what a correct controller answers each kind, for its topic or partition (semantics.md, "CreateTopics,
#: DeleteTopics, ElectLeaders"; the kinds: `broker_sim/model/admin_probes.py`)
EXPECTED = {
    "create-taken": ErrorCode.TOPIC_ALREADY_EXISTS,
    "create-replication-factor": ErrorCode.INVALID_REPLICATION_FACTOR,  # 32,767: more than any cluster's brokers
    "create-unregistered-replica": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    "create-empty-replicas": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    "create-bad-partition-indexes": ErrorCode.INVALID_REPLICA_ASSIGNMENT,  # not 0..N-1 each once
    "create-repeated-replica": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    "create-uneven-replicas": ErrorCode.INVALID_REPLICA_ASSIGNMENT,  # unlike partition 0's count
    "elect-unknown-topic": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    "elect-unknown-partition": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ELECT_UNCLEAN_LED: ErrorCode.ELECTION_NOT_NEEDED,  # UNCLEAN only for a leaderless partition
    ELECT_UNCLEAN_LEADERLESS: ErrorCode.ELECTION_NOT_NEEDED,  # ... which it no longer was
}


def expected(entry: AdminProbe) -> frozenset[int] | None:
    """The errors that are right for the probe's topic or partition when the controller holds what
    the fleet knew (None: a kind this checker does not know, a newer fleet's). "delete-unknown":
    UNKNOWN_TOPIC_ID by id (v6), UNKNOWN_TOPIC_OR_PARTITION by name."""
    if entry.probe == DELETE_UNKNOWN:
        by_id = bool(entry.detail.get("by_id"))
        return frozenset({ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
    code = EXPECTED.get(entry.probe)
    return None if code is None else frozenset({code})


def wrong_admin_answer(entry: AdminProbe, leaderless: bool = False, stranded: bool = True) -> str | None:
    """Why a refused admin probe's answer is not the one semantics.md names, or None (see the module
    rules; `leaderless`: the partition of an UNCLEAN kind had no leader while in flight; `stranded`:
    nor, at some time then, any replica eligible to lead)."""
    allowed = expected(entry)
    if not entry.errors or entry.accepted or allowed is None:
        return None
    top, named = entry.errors[0], entry.errors[1:]
    if leaderless and entry.probe in UNCLEAN_KINDS:
        if stranded:
            allowed = allowed | {ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}
        elif named == [ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE]:
            return "no eligible leader, yet a replica could lead for the whole flight: the election was owed"
    names = " or ".join(f"{ErrorCode(code).name} ({int(code)})" for code in sorted(allowed))
    if top != ErrorCode.NONE:
        return f"expected {names} for the {_what(entry)}, not the top-level error {top}"
    if len(named) != 1:
        return f"expected one answer, {names}, for the {_what(entry)}; got {named or 'none'}"
    if named[0] not in allowed:
        return f"expected {names} for the {_what(entry)}"
    return None


def _what(entry: AdminProbe) -> str:
    return "partition" if entry.api == "ElectLeaders" else "topic"


def note_change(transitions: list[tuple[int, bool]], at_ms: int, held: bool) -> None:
    """Add (at_ms, held) to `transitions` (the form `held_between` reads) if the condition changed."""
    if not transitions or transitions[-1][1] != held:
        transitions.append((at_ms, held))


def held_between(transitions: Sequence[tuple[int, bool]], start_ms: int, end_ms: int) -> bool:
    """Did a partition's condition (leaderless, say) hold at some time in [start_ms, end_ms]?
    `transitions`: (batch timestamp, the condition at its end) each time that changed, in log
    order; a state holds from its batch's timestamp to the next change's."""
    before = False
    for at, held in transitions:
        if at > end_ms:
            break
        if at <= start_ms:
            before = held
        elif held:
            return True
    return before


class AdminProbeCheck(Subscriber):
    """Judges the journal's admin probes (see the module rules)."""

    name = "admin-probes"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.model: Model = image.model
        self.image = image
        self.entries: list[AdminProbe] = []
        #: per probed partition, (batch timestamp, leaderless) and (timestamp, leaderless with no
        #: replica eligible) at each change of either, in log order
        self.watched: dict[Watched, list[tuple[int, bool]]] = {}
        self.stranded: dict[Watched, list[tuple[int, bool]]] = {}
        self.checked: Counter[str] = Counter()
        self._unverifiable: Counter[str] = Counter()

    # ------------------------------------------------------------------ events
    def on_journal_entry(self, entry: Entry) -> None:
        if not isinstance(entry, AdminProbe):
            return
        self.entries.append(entry)
        if entry.probe in UNCLEAN_KINDS and _judged(entry):
            self.watched.setdefault(_partition_of(entry), [])
            self.stranded.setdefault(_partition_of(entry), [])

    def follows(self, hook: str) -> bool:
        if hook == "on_batch_end":
            return bool(self.watched)
        if hook == "on_log_end":
            return bool(self.entries)
        return super().follows(hook)

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        for key, transitions in self.watched.items():
            partition = self._partition(key)
            if partition is None:
                continue
            leaderless = partition.leader == NO_LEADER
            note_change(transitions, batch.timestamp_ms, leaderless)
            stranded = leaderless and not any(
                self.model.is_active(replica) and replica not in partition.offline for replica in partition.replicas
            )
            note_change(self.stranded[key], batch.timestamp_ms, stranded)

    def on_log_end(self, end: LogEnd) -> None:
        for entry in self.entries:
            self.judge(entry)

    def counts(self) -> Mapping[str, int]:
        return dict(self.checked)

    def unverifiable(self) -> Mapping[str, int]:
        return self._unverifiable

    # ------------------------------------------------------------------ judging
    def _partition(self, key: Watched) -> Partition | None:
        return self.model.partition_named(*key)

    def _stranded(self, entry: AdminProbe) -> bool:
        """Was the probed partition leaderless with no replica eligible at some time in flight?"""
        # from the send on, no slack before it: a batch is stamped as it is applied, so one stamped
        # before the request was sent was in the state the controller decided on
        _, end = _flight(entry)
        return held_between(self.stranded.get(_partition_of(entry), []), entry.sent_wall_ns // NS_PER_MS, end)

    def _leaderless(self, entry: AdminProbe) -> bool | None:
        """Was the probed partition leaderless while the request was in flight? None: the log does
        not say (it never held the partition, or the flight began before its history)."""
        transitions = self.watched.get(_partition_of(entry))
        start, end = _flight(entry)
        if not transitions or self.model.before_history(start):
            return None
        return held_between(transitions, start, end)

    def _led_again(self, entry: AdminProbe) -> bool:
        """Did a batch within the probe's flight (with the slack) give its partition a leader?"""
        start, end = _flight(entry)
        transitions = self.watched.get(_partition_of(entry), [])
        return any(start <= at <= end and not leaderless for at, leaderless in transitions)

    def judge(self, entry: AdminProbe) -> None:
        if not _judged(entry):
            return
        if UNAUTHORIZED & set(entry.errors):
            self.checked["admin_probe_unauthorized"] += 1
            return
        if expected(entry) is None:
            self.checked["admin_probe_unknown"] += 1
            return
        leaderless = False
        if entry.probe in UNCLEAN_KINDS and (entry.accepted or entry.errors[1:] != [84]):
            found = self._leaderless(entry)
            if found is None:
                self._unverifiable[entry.kind] += 1
                return
            leaderless = found
        self.checked["admin_probe"] += 1
        if entry.accepted:
            if leaderless:
                self.checked["admin_probe_unclean_elected"] += 1
                if not self._led_again(entry):
                    self.violation(
                        "unclean-answer",
                        f"{entry.api} v{entry.api_version} admin probe {entry.probe} ({_named(entry)}) was "
                        f"answered elected (errors {entry.errors}), but the log leaves the partition leaderless "
                        f"through the request's flight (+{WINDOW_SLACK_MS} ms)",
                        entry,
                    )
                return
            self._accepted(entry)
        elif (wrong := wrong_admin_answer(entry, leaderless, leaderless and self._stranded(entry))) is not None:
            self.violation(
                "probe-answer",
                f"{entry.api} v{entry.api_version} admin probe {entry.probe} ({_named(entry)}) "
                f"was answered {entry.errors}: {wrong}",
                entry,
            )

    def _accepted(self, entry: AdminProbe) -> None:
        offsets = self._topic_records(str(entry.detail.get("topic", ""))) if entry.api == "CreateTopics" else []
        seen = ""
        if entry.api == "CreateTopics" and not entry.detail.get("validate_only"):
            if entry.probe == "create-taken" and len(offsets) <= 1:
                seen = f"; nothing written (the log's TopicRecords of that name: {offsets or 'none'})"
            elif offsets:
                seen = f"; the log holds TopicRecords of that name at offsets {offsets}"
            else:
                seen = "; the log holds no TopicRecord of that name"
        self.violation(
            "probe-accepted",
            f"{entry.api} v{entry.api_version} admin probe {entry.probe} ({_named(entry)}) was accepted "
            f"(errors {entry.errors}){seen}",
            entry,
            offsets[-1] if offsets else None,
        )

    def _topic_records(self, name: str) -> list[int]:
        """The offsets of the log's TopicRecords of `name` (none from a base snapshot)."""
        return sorted(
            offset
            for topic_name, offset, _ in self.image.history.topics.values()
            if topic_name == name and offset is not None
        )

    def violation(self, rule: str, message: str, entry: Entry, offset: int | None = None) -> None:
        if not self.sink.count_only(rule):
            self.sink.add(Violation(rule, message, offset, journal=render_entry(entry)))


def _partition_of(entry: AdminProbe) -> Watched:
    """The (topic name, partition) an ElectLeaders probe named."""
    return (str(entry.detail.get("topic")), int(entry.detail.get("partition", -1)))


def _flight(entry: AdminProbe) -> tuple[int, int]:
    """The probe's flight in ms, from its send to its answer, widened by `WINDOW_SLACK_MS` each way."""
    return entry.sent_wall_ns // NS_PER_MS - WINDOW_SLACK_MS, entry.wall_ns // NS_PER_MS + WINDOW_SLACK_MS


def _judged(entry: AdminProbe) -> bool:
    return bool(entry.errors) and ErrorCode.NOT_CONTROLLER not in entry.errors


def _named(entry: AdminProbe) -> str:
    return ", ".join(f"{key} {value}" for key, value in entry.detail.items()) or "as built"
