"""The rules of a controller quorum (KIP-595's Raft among the controllers): its nodes' logs against each other.

A quorum's nodes each hold a log of record batches whose partition leader epoch is the Raft epoch;
a LeaderChange control batch, written by the epoch's leader when it is elected, opens each epoch
and names that leader. The committed log is the longest prefix held identically by a majority of
the nodes (`quorum.committed_prefix`). The rules, by id (violations.RULES):

- `quorum-log-matching` (Raft's Log Matching): two logs holding a batch at the same base offset
  with the same epoch hold the same batch there (byte for byte) and the same batches below it. A
  node's snapshot ends within the committed log (Kafka snapshots only below the high watermark),
  at the epoch of the committed batch ending there.
- `quorum-one-leader`: one leader per epoch: the LeaderChange records of one epoch, in any log,
  and the `quorum-state` files naming a leader for it, all name the same node.
- `quorum-epoch-order`: along each node's log, epochs never decrease, and a batch raising the
  epoch is a LeaderChange (a follower copies the leader's log in order, and the leader writes
  its LeaderChange first). A log's first batch opens no epoch of its own.
- `quorum-acked-on-node`: every acknowledged change (an AlterPartition, registration or topic the
  journal says was answered NONE) is in the log of every node holding the final committed offset
  (its last batch, at the same offset and epoch). Such a node holds the committed log identically,
  unless Log Matching is broken; then its log is replayed with the journal as the committed log is,
  and each acknowledged change present in the committed log but not in its log is a violation.
  (That the committed log holds them is the single-log rules' `ack-lost`, `registration-lost`,
  `topic-lost` on it: an answer before the majority's commit shows there.)
- `quorum-deposed-write` (`DeposedWrites`, on the replay of the committed log): nothing a deposed
  leader wrote after its epoch ended is committed. Raft's leader of epoch E appends only batches
  of epoch E; the leader of a later epoch E' is elected by a majority that then never accepts
  epoch E's appends, writes its LeaderChange, and only appends after it; a batch below that
  LeaderChange in the committed log was in the new leader's log when it was elected, so was
  written before. Hence, for any batches b before c in the committed log (b's offset lower):
  (1) b.epoch <= c.epoch: no batch of epoch E follows a batch of a higher epoch (so none sits
  after the LeaderChange of epoch E+1); (2) if c is the first batch of its epoch (its
  LeaderChange) and b.epoch < c.epoch, b.timestamp <= c.timestamp: nothing below a LeaderChange
  was written after it. (2) compares the writers' clocks (batch base timestamps, milliseconds):
  exact with one clock, as when the fleet runs the quorum on one host; across hosts, their skew
  bounds what it can tell.
  A batch of epoch E stamped after a LeaderChange of a higher epoch that is not in the committed
  log is no violation: Raft lets E's leader, re-elected later, commit it (the other leader's
  LeaderChange then never reached a majority).
- `stale-controller-epoch` (`StaleControllerEpochs`, on the journal): no broker acted on a
  LeaderAndIsr or StopReplica of an older controller epoch than one it had seen. A broker's
  listener journals each controller epoch newer than any its incarnation had seen, when it acts
  on a request carrying it (`ControllerEpochSeen`, with the incarnation's broker epoch; the first
  of each incarnation too, before that request's states), and each partition state it accepts
  from a LeaderAndIsr, with the request's controller epoch (`StateObserved`, first sightings); a
  new incarnation (a new broker epoch there, or in a `Registered`) has seen nothing. So, per
  broker, in journal order: neither may carry a controller epoch below the newest its incarnation
  had shown. What the journal cannot show: a StopReplica, or a LeaderAndIsr whose states the
  broker had all seen, acted on under an epoch that is not newer (only newer ones are journalled),
  and the incarnation of a `StateObserved` (the journal's order stands in for it).
- `controller-epoch-leader` (`ControllerEpochLeaders`, the journal against the committed log): a
  controller's epoch is its Raft epoch (KRaft), so a LeaderAndIsr or StopReplica sent under
  controller epoch E comes from the leader the LeaderChange of epoch E names. Each (controller id,
  controller epoch) a broker's listener was sent (`ControlSenderSeen`) is held against the
  LeaderChange records the replay meets (an epoch without one there, below a base snapshot or
  never committed, is counted unverifiable: `observed-controller-epoch` judges epochs the log lacks).
- `quorum-deposed-leader` (`QuorumTimeline`, on the journal of a run with the fleet's own quorum):
  a leader cut off from a majority resigns by check-quorum, 1.5 fetch timeouts after a majority
  last fetched from it; a newer epoch's leader is elected only after a majority went a fetch
  timeout without fetching from the old one, so the old one resigns within half a fetch timeout of
  that election. The fleet asks every running, unpaused node DescribeQuorum every 100 ms and
  journals the nodes answering as leaders whenever they change (`QuorumLeadersSeen`). A node seen
  saying it leads an epoch for longer than `DEPOSED_BOUND` fetch timeouts plus `DEPOSED_SLACK_MS`
  (the watcher's rounds and a loaded machine's stalls) after a newer epoch's leader was first seen
  is a violation. The bound counts from the later of that sighting and the start of the node's
  claim: a node paused meanwhile (not asked) starts a new claim when it is asked again, and
  resigns at its first tick.
- `quorum-stale-vote` (on the journal): no voter grants a (pre-)vote to a candidate whose log is
  behind its own (Raft's up-to-date check, KIP-595). The fleet sends, while a controller fault is
  on, pre-votes in each node's own epoch for a candidate with an empty log (`VoteProbed`), only to
  nodes a leader had named voters holding at least one committed offset (`known_end`, never
  truncated); a grant is a violation.
- `quorum-divergent-tail` (at the end, on the journal and the nodes' logs): a node that leaves the
  committed log (holds a batch the committed log has not at that offset: a divergent tail) has it
  truncated by its leader within a fetch or two once it is connected. At the end of a run whose
  quorum was whole (no controller fault in progress, none begun or ended, a restart counted from
  `RESTART_ALLOWANCE_MS` after it) for `DIVERGENT_BOUND` fetch timeouts, every node holding a
  divergent tail is a violation.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker_sim.journal import (
    ControllerEpochSeen,
    ControllerFaulted,
    ControlSenderSeen,
    Entry,
    QuorumLeadersSeen,
    QuorumStarted,
    Registered,
    RunEnded,
    StateObserved,
    VoteProbed,
)
from protocol.records.control import LeaderChangeMessage
from protocol.spec import Data

from .events import LogEnd, RecordHandler, SnapshotRecords, Subscriber
from .journal_rules import JournalCheck
from .liveness import render_entry
from .log import Batch, Outline, SnapshotFile
from .rules import LogRules
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .quorum import Committed, Node

#: the journal rules whose violation means an acknowledged change is not in a log
LOST_RULES = frozenset({"ack-lost", "registration-lost", "topic-lost"})
NS_PER_MS = 1_000_000
#: `quorum-deposed-leader`: fetch timeouts a deposed leader may go on saying it leads, after a newer
#: epoch's leader was seen (check-quorum's own timeout: at least a fetch timeout more than needed)
DEPOSED_BOUND = 1.5
DEPOSED_SLACK_MS = 250
#: `quorum-divergent-tail`: fetch timeouts of a whole quorum after which no divergent tail is left
DIVERGENT_BOUND = 3
RESTART_ALLOWANCE_MS = 5_000  # a restarted node's start-up (a Python process), before it can fetch
#: the controller faults that end a fault (the others begin one)
FAULT_ENDS = {"kill": "restart", "shutdown": "restart", "wipe": "restart", "pause": "resume", "cut": "heal"}


# ---------------------------------------------------------------------- across the logs
def log_matching(nodes: Sequence[Node], committed: Committed, sink: ViolationSink) -> None:
    """`quorum-log-matching`: every pair of logs, then every node's snapshots against the committed log."""
    for index, node in enumerate(nodes):
        for other in nodes[index + 1 :]:
            _matching_pair(node, other, sink)
    epochs = {batch.next_offset: batch.epoch for batch in committed.batches}
    for node in nodes:
        for snapshot in node.snapshots:
            _snapshot_within(node, snapshot, committed, epochs, sink)


def _matching_pair(node: Node, other: Node, sink: ViolationSink) -> None:
    theirs = {batch.base_offset: batch for batch in other.outline}
    start = max(node.start_offset, other.start_offset)
    diverged: int | None = None
    for batch in node.outline:
        if batch.base_offset < start:
            continue
        twin = theirs.get(batch.base_offset)
        if diverged is None:
            if twin is not None and twin.identity == batch.identity:
                continue
            if twin is None and batch.base_offset >= other.end_offset:
                return  # the other log ends here: a prefix, no divergence
            diverged = batch.base_offset
        if twin is not None and twin.epoch == batch.epoch:
            what = "holds a different batch there" if twin.identity != batch.identity else "holds the same batch"
            below = "" if batch.base_offset == diverged else f", but their logs differ from offset {diverged}"
            sink.add(
                Violation(
                    "quorum-log-matching",
                    f"{node.label} and {other.label} both hold a batch of epoch {batch.epoch} at offset "
                    f"{batch.base_offset}; {other.label} {what}{below}",
                    batch.base_offset,
                    records=(_show(node, batch), _show(other, twin)),
                )
            )
            return


def _snapshot_within(
    node: Node, snapshot: SnapshotFile, committed: Committed, epochs: dict[int, int], sink: ViolationSink
) -> None:
    if snapshot.end_offset > committed.end_offset:
        message = (
            f"{node.label} holds snapshot {snapshot.path.name}, ending at offset {snapshot.end_offset}, beyond "
            f"the committed log's end ({committed.end_offset}): a node snapshots only what is committed"
        )
        sink.add(Violation("quorum-log-matching", message, snapshot.end_offset))
        return
    epoch = epochs.get(snapshot.end_offset)
    if epoch is not None and epoch != snapshot.epoch:
        message = (
            f"{node.label} holds snapshot {snapshot.path.name} of epoch {snapshot.epoch}; the committed batch "
            f"ending at offset {snapshot.end_offset} is of epoch {epoch}"
        )
        sink.add(Violation("quorum-log-matching", message, snapshot.end_offset))


def one_leader(nodes: Sequence[Node], sink: ViolationSink) -> None:
    """`quorum-one-leader`: who each LeaderChange and quorum-state names, per epoch."""
    leaders: dict[int, dict[int, str]] = {}  # epoch -> leader -> where it was first named
    for node in nodes:
        for batch in node.outline:
            if batch.leader_change is not None:
                where = f"{node.label}: LeaderChange at offset {batch.base_offset}"
                leaders.setdefault(batch.epoch, {}).setdefault(batch.leader_change.leader_id, where)
        state = node.quorum_state
        if state is not None and state.leader_id >= 0:
            leaders.setdefault(state.leader_epoch, {}).setdefault(state.leader_id, f"{node.label}: quorum-state")
    for epoch, named in sorted(leaders.items()):
        if len(named) > 1:
            sink.add(
                Violation(
                    "quorum-one-leader",
                    f"epoch {epoch} has {len(named)} leaders: "
                    + "; ".join(f"{leader} ({where})" for leader, where in sorted(named.items())),
                )
            )


def epoch_order(nodes: Sequence[Node], sink: ViolationSink) -> None:
    """`quorum-epoch-order`: along each node's log."""
    for node in nodes:
        previous: Outline | None = None
        for batch in node.outline:
            if previous is not None and batch.epoch < previous.epoch:
                message = f"{node.label}: epoch {batch.epoch} after epoch {previous.epoch}"
                sink.add(Violation("quorum-epoch-order", message, batch.base_offset, records=(_show(node, batch),)))
            elif previous is not None and batch.epoch > previous.epoch and batch.leader_change is None:
                message = f"{node.label}: epoch {batch.epoch} opens with a batch other than its LeaderChange"
                sink.add(Violation("quorum-epoch-order", message, batch.base_offset, records=(_show(node, batch),)))
            previous = batch


def _show(node: Node, batch: Outline) -> str:
    kind = f"LeaderChange(leader_id={batch.leader_change.leader_id})" if batch.leader_change is not None else "batch"
    return (
        f"{node.label}: {kind} @{batch.base_offset}..{batch.next_offset - 1} "
        f"(epoch {batch.epoch}, timestamp {batch.timestamp_ms})"
    )


# ---------------------------------------------------------------------- acknowledged changes on each node
class AckedChanges(JournalCheck):
    """The journal's judgement of one log, keeping which acknowledged changes the log lacks
    (every one, by rule and entry) instead of reporting them."""

    name = "acked-changes"

    def __init__(self, image: LogRules) -> None:
        super().__init__(image)
        self.lost: set[tuple[str, str]] = set()

    def violation(self, rule: str, message: str, entry: Entry, offset: int | None = None, **where: object) -> None:
        if rule in LOST_RULES:
            self.lost.add((rule, render_entry(entry)))


def acked_on_node(
    node: Node, lost_there: set[tuple[str, str]], lost_committed: set[tuple[str, str]]
) -> list[Violation]:
    """`quorum-acked-on-node`: what `node` (holding the final committed offset) lacks that the committed log has."""
    return [
        Violation(
            "quorum-acked-on-node",
            f"{node.label} holds the final committed offset, yet lacks this acknowledged change "
            f"(its log differs from the committed log from offset {node.diverges_at}; {rule})",
            journal=entry,
        )
        for rule, entry in sorted(lost_there - lost_committed)
    ]


# ---------------------------------------------------------------------- on the committed log
class DeposedWrites(Subscriber):
    """`quorum-deposed-write`, along the replay of the committed log (see the module rules)."""

    name = "quorum-deposed-writes"

    def __init__(self) -> None:
        super().__init__()
        self.epoch = -1  # the highest epoch so far
        self.latest: tuple[int, int, int] | None = None  # (timestamp, offset, epoch) of the latest-stamped batch

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        self.epoch = snapshot.epoch

    def on_batch_begin(self, batch: Batch) -> None:
        if batch.epoch < self.epoch:
            self.sink.add(
                Violation(
                    "quorum-deposed-write",
                    f"a batch of epoch {batch.epoch} is committed after epoch {self.epoch} began: "
                    f"epoch {batch.epoch}'s leader wrote it after a later leader's",
                    batch.base_offset,
                )
            )
        elif batch.epoch > self.epoch:
            latest = self.latest
            if latest is not None and latest[0] > batch.timestamp_ms:
                self.sink.add(
                    Violation(
                        "quorum-deposed-write",
                        f"the batch at offset {latest[1]} (epoch {latest[2]}, stamped {latest[0]}) is committed below "
                        f"epoch {batch.epoch}'s first batch, stamped {batch.timestamp_ms}, earlier: its leader wrote "
                        "it after the later leader was elected",
                        latest[1],
                    )
                )
            self.epoch = batch.epoch
        if self.latest is None or batch.timestamp_ms > self.latest[0]:
            self.latest = (batch.timestamp_ms, batch.base_offset, batch.epoch)


# ---------------------------------------------------------------------- on the journal
@dataclass
class _Listener:
    broker_epoch: int  # the incarnation's (-1: not yet known)
    seen: int = -1  # the newest controller epoch it acted on
    where: str = ""  # the entry that showed it


class StaleControllerEpochs(Subscriber):
    """`stale-controller-epoch`, along the journal (see the module rules)."""

    name = "stale-controller-epochs"

    def __init__(self) -> None:
        super().__init__()
        self.listeners: dict[int, _Listener] = {}
        self.judged = 0

    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, StateObserved):
            self._acted(entry, entry.broker, self.listeners.setdefault(entry.broker, _Listener(-1)))
        elif isinstance(entry, ControllerEpochSeen):
            self._acted(entry, entry.broker, self._incarnation(entry.broker, entry.broker_epoch))
        elif isinstance(entry, Registered):
            self._incarnation(entry.broker, entry.broker_epoch)

    def _incarnation(self, broker: int, broker_epoch: int) -> _Listener:
        listener = self.listeners.get(broker)
        if listener is None or listener.broker_epoch != broker_epoch:
            listener = self.listeners[broker] = _Listener(broker_epoch)
        return listener

    def _acted(self, entry: StateObserved | ControllerEpochSeen, broker: int, listener: _Listener) -> None:
        self.judged += 1
        if entry.controller_epoch >= listener.seen:
            listener.seen, listener.where = entry.controller_epoch, render_entry(entry)
            return
        if self.sink.count_only("stale-controller-epoch"):
            return
        what, partition = f"a {entry.api}" if isinstance(entry, ControllerEpochSeen) else "a LeaderAndIsr", None
        if isinstance(entry, StateObserved) and _named(entry.topic_id):
            partition = f"{entry.topic_id}-{entry.partition}"
        self.sink.add(
            Violation(
                "stale-controller-epoch",
                f"broker {broker} acted on {what} of controller epoch {entry.controller_epoch} "
                f"after one of epoch {listener.seen} (first: {listener.where})",
                journal=render_entry(entry),
                partition=partition,
                broker=broker,
            )
        )

    def counts(self) -> dict[str, int]:
        return {"journal_controller_epochs_judged": self.judged}


class ControllerEpochLeaders(Subscriber):
    """`controller-epoch-leader` (see the module rules)."""

    name = "controller-epoch-leaders"

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[ControlSenderSeen] = []
        self.leaders: dict[int, tuple[int, int]] = {}  # epoch -> (leader id, offset of its LeaderChange)
        self._epoch = -1
        self.judged = 0
        self._unverifiable = 0

    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, ControlSenderSeen):
            self.sent.append(entry)

    def on_batch_begin(self, batch: Batch) -> None:
        self._epoch = batch.epoch

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        return {LeaderChangeMessage: self._leader_change}

    def _leader_change(self, offset: int, record: Data) -> None:
        assert isinstance(record, LeaderChangeMessage)
        self.leaders.setdefault(self._epoch, (record.leader_id, offset))

    def on_log_end(self, end: LogEnd) -> None:
        for entry in self.sent:
            leader = self.leaders.get(entry.controller_epoch)
            if leader is None:
                self._unverifiable += 1
                continue
            self.judged += 1
            if leader[0] != entry.controller_id and not self.sink.count_only("controller-epoch-leader"):
                self.sink.add(
                    Violation(
                        "controller-epoch-leader",
                        f"controller {entry.controller_id} sent broker {entry.broker} a {entry.api} under controller "
                        f"epoch {entry.controller_epoch}, whose LeaderChange names leader {leader[0]}",
                        leader[1],
                        journal=render_entry(entry),
                        broker=entry.broker,
                    )
                )

    def counts(self) -> dict[str, int]:
        return {"journal_control_senders_judged": self.judged}

    def unverifiable(self) -> dict[str, int]:
        return {"control_sender": self._unverifiable} if self._unverifiable else {}


class QuorumTimeline(Subscriber):
    """`quorum-deposed-leader` and `quorum-stale-vote` along the journal, and what
    `quorum-divergent-tail` needs of it (see the module rules): the quorum's timeouts, each node's
    last controller fault, the run's end."""

    name = "quorum-timeline"

    def __init__(self) -> None:
        super().__init__()
        self.fetch_timeout_ms: int | None = None
        self.last_fault: dict[int, ControllerFaulted] = {}
        self.end_ns: int | None = None
        self.started_ns: int | None = None
        self.claims: dict[int, tuple[int, int, str]] = {}  # node -> (epoch, since ns, where)
        self.first_seen: dict[int, int] = {}  # epoch -> when a leader of it was first seen (ns)
        self.judged = {"claims": 0, "votes": 0}

    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, QuorumStarted):
            self.fetch_timeout_ms, self.started_ns = entry.fetch_timeout_ms, entry.wall_ns
        elif isinstance(entry, QuorumLeadersSeen):
            self._leaders(entry)
        elif isinstance(entry, VoteProbed):
            self._vote(entry)
        elif isinstance(entry, ControllerFaulted):
            self.last_fault[entry.node] = entry
        elif isinstance(entry, RunEnded):
            self.end_ns = entry.wall_ns
            for node in list(self.claims):
                self._claim_ended(node, entry.wall_ns)

    # ------------------------------------------------------------------ quorum-deposed-leader
    def _leaders(self, entry: QuorumLeadersSeen) -> None:
        now, seen = entry.wall_ns, {node: epoch for node, epoch in entry.leaders}
        for node, (epoch, _since, _where) in list(self.claims.items()):
            if seen.get(node) != epoch:
                self._claim_ended(node, now)
        for node, epoch in seen.items():
            self.first_seen.setdefault(epoch, now)
            if node not in self.claims:
                self.claims[node] = (epoch, now, render_entry(entry))

    def _claim_ended(self, node: int, now: int) -> None:
        epoch, since, where = self.claims.pop(node)
        self.judged["claims"] += 1
        newer = [seen for later, seen in self.first_seen.items() if later > epoch]
        if self.fetch_timeout_ms is None or not newer:
            return
        bound_ms = DEPOSED_BOUND * self.fetch_timeout_ms + DEPOSED_SLACK_MS
        overlap_ms = (now - max(since, min(newer))) / NS_PER_MS
        if overlap_ms > bound_ms:
            newest = max(later for later in self.first_seen if later > epoch)
            self.sink.add(
                Violation(
                    "quorum-deposed-leader",
                    f"node {node} said it led epoch {epoch} for {overlap_ms:.0f} ms after a leader of a newer "
                    f"epoch was seen (epoch {newest} by the end of it); a cut-off leader resigns within "
                    f"{bound_ms:.0f} ms (check-quorum: {DEPOSED_BOUND:g} fetch timeouts of "
                    f"{self.fetch_timeout_ms} ms)",
                    journal=where,
                )
            )

    # ------------------------------------------------------------------ quorum-stale-vote
    def _vote(self, entry: VoteProbed) -> None:
        self.judged["votes"] += 1
        behind = entry.last_epoch == 0 and entry.last_offset < entry.known_end
        if entry.granted and entry.error == 0 and behind and entry.known_end >= 1:
            self.sink.add(
                Violation(
                    "quorum-stale-vote",
                    f"node {entry.node} granted a pre-vote in epoch {entry.epoch} to voter {entry.candidate}, whose "
                    f"log ends at offset {entry.last_offset} (epoch {entry.last_epoch}), while its own held at "
                    f"least {entry.known_end} committed offsets",
                    journal=render_entry(entry),
                )
            )

    # ------------------------------------------------------------------ quorum-divergent-tail
    def whole_for_ms(self) -> float | None:
        """How long the quorum was whole before the run ended (None: it was not, or the journal
        does not say)."""
        if self.end_ns is None or self.started_ns is None:
            return None
        since = self.started_ns
        for fault in self.last_fault.values():
            if fault.fault in FAULT_ENDS:
                return None  # a fault still on at the end (a node left down, paused or cut off)
            allowance = RESTART_ALLOWANCE_MS * NS_PER_MS if fault.fault == "restart" else 0
            since = max(since, fault.wall_ns + allowance)
        return (self.end_ns - since) / NS_PER_MS

    def counts(self) -> dict[str, int]:
        return {
            "journal_quorum_claims_judged": self.judged["claims"],
            "journal_vote_probes_judged": self.judged["votes"],
        }


def divergent_tails(nodes: Sequence[Node], committed: Committed, timeline: QuorumTimeline, sink: ViolationSink) -> None:
    """`quorum-divergent-tail` (see the module rules)."""
    whole_ms, fetch_ms = timeline.whole_for_ms(), timeline.fetch_timeout_ms
    if whole_ms is None or fetch_ms is None or whole_ms < DIVERGENT_BOUND * fetch_ms:
        return
    for node in nodes:
        if node.diverges_at is not None and node.diverges_at < committed.end_offset:
            sink.add(
                Violation(
                    "quorum-divergent-tail",
                    f"{node.label} leaves the committed log at offset {node.diverges_at} (its log ends at "
                    f"{node.end_offset}, the committed log at {committed.end_offset}) although the quorum was "
                    f"whole for the last {whole_ms:.0f} ms of the run ({DIVERGENT_BOUND} fetch timeouts of "
                    f"{fetch_ms} ms): its leader never had its divergent tail truncated",
                    node.diverges_at,
                )
            )


def _named(topic_id: str) -> bool:
    try:
        return uuid.UUID(topic_id).int != 0
    except ValueError:
        return False


def quorum_subscribers() -> list[Subscriber]:
    """The quorum's rules that follow the replay of the committed log and its journal."""
    return [DeposedWrites(), StaleControllerEpochs(), ControllerEpochLeaders(), QuorumTimeline()]
