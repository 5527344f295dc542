"""The rules of a controller quorum that follow the fleet's journal: the brokers' controller
epochs, who sent under each epoch, the leaders and votes the fleet saw of its own quorum, and the
divergent tails left at the end of a run.

The quorum's rules on its nodes' logs, and on the committed log they define, are in `quorum_rules`.
The rules, by id (violations.RULES):

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

from .events import LogEnd, RecordHandler, Subscriber
from .log import Batch
from .rendering import render_entry
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .quorum import Committed, Node

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
