"""A check of a controller quorum: one data dir per node -> the committed log's check and the quorum's rules.

`check_quorum([DIR1, DIR2, DIR3], journal)`:
1. Each node's log is read in outline (`LogReader.outline`: every batch validated as a check reads
   it, with its offsets, epoch, timestamp, an identity and its LeaderChange), with the node id of
   its `meta.properties` and its `quorum-state` (Kafka's `QuorumStateData` JSON, v0 or v1).
2. The committed log is the longest prefix of batches held identically by a majority of the nodes
   (`committed_prefix`): everything Raft committed is on a majority and, by Log Matching, the same
   there. It may also hold batches on a majority that Raft had not yet committed (Raft commits an
   older epoch's batch only with one of the current epoch): no correct controller's log breaks a
   single-log rule there either.
3. Everything `check` does (the log's rules, the snapshots, the journal against the log) runs on
   the committed log: the log of a node holding it identically (the one starting earliest, the
   first given on a tie), replayed up to the committed end offset; the quorum's rules that follow
   a replay (`quorum_rules.quorum_subscribers`) hear the same events.
4. The quorum's rules across the logs (`quorum_rules`).

Rules:
- The majority is of the data dirs given: give every voter's. A note says when the newest
  LeaderChange names a voter that no given node is (by `node.id`).
- Below its first batch (older segments deleted, or a snapshot installed), a node agrees with the
  others: its snapshot holds that prefix (`quorum-log-matching` checks the snapshot's bounds).
- A node whose log is a prefix of the committed log lags; one that holds it and more has an
  uncommitted tail; one that leaves it within has a divergent tail its next leader truncates
  (a note, unless a rule is broken). A node dir holding no log yet is an empty log (a note); a
  missing one is a `CheckError`, as is a quorum where no node has a log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_sim.journal import Entry

from . import CheckResult, check_replay
from .events import Subscriber, findings
from .journal_plan import JournalPlan
from .log import PARTITION_DIR, CheckError, LogReader, Outline, SnapshotFile
from .quorum_journal import QuorumTimeline, divergent_tails
from .quorum_rules import AckedChanges, acked_on_node, epoch_order, log_matching, one_leader, quorum_subscribers
from .replay import Replay
from .rules import LogRules
from .state import Model
from .violations import Violation, ViolationSink

QUORUM_STATE = "quorum-state"
META_PROPERTIES = "meta.properties"


@dataclass(frozen=True, slots=True)
class QuorumState:
    """What a node's `quorum-state` says: the leader it knows of, the epoch, its vote (-1: none)."""

    leader_id: int
    leader_epoch: int
    voted_id: int


@dataclass
class Node:
    """One node's log in outline, and where it stands against the committed log."""

    data_dir: Path
    node_id: int | None
    quorum_state: QuorumState | None
    outline: list[Outline]
    snapshots: list[SnapshotFile]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    label: str = ""
    identical: bool = False  # holds the committed log batch for batch
    holds_end: bool = False  # holds the committed log's last batch (its offset and epoch)
    diverges_at: int | None = None  # the first offset where it differs from the committed log

    @property
    def start_offset(self) -> int:
        if self.outline:
            return self.outline[0].base_offset
        return max((snapshot.end_offset for snapshot in self.snapshots), default=0)

    @property
    def end_offset(self) -> int:
        return self.outline[-1].next_offset if self.outline else self.start_offset

    @property
    def last_epoch(self) -> int:
        return self.outline[-1].epoch if self.outline else -1

    def to_json(self) -> dict[str, Any]:
        state = self.quorum_state
        return {
            "data_dir": str(self.data_dir),
            "node_id": self.node_id,
            "label": self.label,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "batches": len(self.outline),
            "last_epoch": self.last_epoch,
            "snapshots": [snapshot.path.name for snapshot in self.snapshots],
            "quorum_state": None
            if state is None
            else {"leader_id": state.leader_id, "leader_epoch": state.leader_epoch, "voted_id": state.voted_id},
            "holds_committed_log": self.identical,
            "holds_committed_end": self.holds_end,
            "diverges_at": self.diverges_at,
            "problems": self.problems,
            "notes": self.notes,
        }


@dataclass
class Committed:
    """The committed log: its batches (as the holders have them), end offset, and who holds it."""

    batches: list[Outline]
    holders: list[int]  # indexes of the nodes holding it identically
    majority: int

    @property
    def start_offset(self) -> int:
        return self.batches[0].base_offset if self.batches else 0

    @property
    def end_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else 0

    @property
    def last(self) -> Outline | None:
        return self.batches[-1] if self.batches else None


@dataclass
class QuorumResult:
    """What a quorum check found: per node, the committed log's check, and the quorum's rules."""

    nodes: list[Node]
    committed: Committed
    replayed: Node
    check: CheckResult  # everything `check` does, on the committed log
    quorum: ViolationSink  # the quorum's rules
    notes: list[str]
    problems: list[str]
    counts: dict[str, int]

    @property
    def violations(self) -> list[Violation]:
        return [*self.check.violations, *self.quorum.kept]

    @property
    def violation_counts(self) -> dict[str, int]:
        counts = dict(self.check.violation_counts)
        for rule, count in self.quorum.counts.items():
            counts[rule] = counts.get(rule, 0) + count
        return counts

    @property
    def violation_total(self) -> int:
        return sum(self.violation_counts.values())

    @property
    def ok(self) -> bool:
        return not self.violation_counts and not self.problems  # the committed log's problems are among them

    def to_json(self) -> dict[str, Any]:
        return {
            "quorum": True,
            "ok": self.ok,
            "violation_total": self.violation_total,
            "violation_counts": self.violation_counts,
            "nodes": [node.to_json() for node in self.nodes],
            "committed": {
                "start_offset": self.committed.start_offset,
                "end_offset": self.committed.end_offset,
                "majority": self.committed.majority,
                "holders": [self.nodes[index].label for index in self.committed.holders],
                "replayed": str(self.replayed.data_dir),
            },
            "quorum_violation_counts": dict(self.quorum.counts),
            "quorum_violations": [violation.to_json() for violation in self.quorum.kept],
            "committed_check": self.check.to_json(),
            "problems": self.problems,
            "notes": self.notes,
            "counts": self.counts,
        }


def check_quorum(data_dirs: Sequence[Path], journal: Iterable[Entry] | None = None) -> QuorumResult:
    """Check a quorum's data dirs, one per node (see the module rules); `CheckError` when there is
    nothing to check."""
    nodes = [read_node(Path(data_dir)) for data_dir in data_dirs]
    notes = _label(nodes)
    if not any(node.outline or node.snapshots for node in nodes):
        raise CheckError(f"no metadata log in any of {', '.join(str(node.data_dir) for node in nodes)}")
    committed = committed_prefix(nodes, len(nodes) // 2 + 1)
    _place(nodes, committed)
    replayed = _replayed(nodes, committed)
    extra = quorum_subscribers()
    result, replay = check_replay(replayed.data_dir, journal, extra=extra, until=committed.end_offset)
    found = findings(extra)
    sink = found.sink
    log_matching(nodes, committed, sink)
    one_leader(nodes, sink)
    epoch_order(nodes, sink)
    for violation in _acked_on_nodes(nodes, committed, replayed, replay.journal):
        sink.add(violation)
    for timeline in extra:
        if isinstance(timeline, QuorumTimeline):
            divergent_tails(nodes, committed, timeline, sink)
    notes.extend(_notes(nodes, committed))
    problems = [f"{node.label}: {problem}" for node in nodes for problem in node.problems]
    problems.extend(f"committed log: {problem}" for problem in result.problems if problem not in replayed.problems)
    counts = {"nodes": len(nodes), "committed_end_offset": committed.end_offset, **found.counts}
    return QuorumResult(nodes, committed, replayed, result, sink, notes, problems, counts)


# ---------------------------------------------------------------------- the nodes
def read_node(data_dir: Path) -> Node:
    """A node's log in outline, its node id and quorum-state; an existing dir without a log is an empty log."""
    if not data_dir.is_dir():
        raise CheckError(f"{data_dir}: no such directory")
    partition = data_dir if data_dir.name == PARTITION_DIR else data_dir / PARTITION_DIR
    notes: list[str] = []
    node = Node(data_dir, _node_id(data_dir, partition), _quorum_state(partition, notes), [], [], notes=notes)
    try:
        reader = LogReader(data_dir)
    except CheckError:
        node.notes.append("no metadata log yet: an empty log")
        return node
    with reader:
        node.outline = list(reader.outline())
        node.snapshots = list(reader.reading.snapshots)
        node.problems.extend(reader.reading.problems)
        node.notes.extend(reader.reading.notes)
    return node


def _node_id(data_dir: Path, partition: Path) -> int | None:
    for directory in (data_dir, partition.parent):
        try:
            text = (directory / META_PROPERTIES).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "node.id" and value.strip().lstrip("-").isdigit():
                return int(value.strip())
    return None


def _quorum_state(partition: Path, notes: list[str]) -> QuorumState | None:
    try:
        tree = json.loads((partition / QUORUM_STATE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        notes.append(f"{QUORUM_STATE} ignored: {exc}")
        return None
    values = [tree.get(key, -1) if isinstance(tree, dict) else None for key in ("leaderId", "leaderEpoch", "votedId")]
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        notes.append(f"{QUORUM_STATE} ignored: not Kafka's QuorumStateData (leaderId, leaderEpoch, votedId)")
        return None
    return QuorumState(*values)  # type: ignore[arg-type]


def _label(nodes: list[Node]) -> list[str]:
    ids = [node.node_id for node in nodes]
    unique = None not in ids and len(set(ids)) == len(ids)
    for node in nodes:
        node.label = f"node {node.node_id}" if unique else str(node.data_dir)
    return (
        []
        if unique
        else ["the nodes are named by their data dirs: their meta.properties do not give distinct node ids"]
    )


# ---------------------------------------------------------------------- the committed log
def committed_prefix(nodes: Sequence[Node], majority: int) -> Committed:
    """The longest prefix of batches held identically by `majority` of `nodes` (see the module rules)."""
    cursors = [0] * len(nodes)
    members = list(range(len(nodes)))
    batches: list[Outline] = []
    holders: list[int] = []
    offset = min(node.start_offset for node in nodes)
    while True:
        groups: dict[tuple[int, int], list[int]] = {}
        found: dict[tuple[int, int], Outline] = {}
        before_start = []
        for index in members:
            node = nodes[index]
            if node.start_offset > offset:
                before_start.append(index)
                continue
            outline, cursor = node.outline, cursors[index]
            if cursor < len(outline) and outline[cursor].base_offset == offset:
                batch = outline[cursor]
                groups.setdefault(batch.identity, []).append(index)
                found.setdefault(batch.identity, batch)
        if not groups:
            break
        identity, group = max(groups.items(), key=lambda item: (len(item[1]), -item[1][0]))
        if len(group) + len(before_start) < majority:
            break
        batch = found[identity]
        batches.append(batch)
        holders = group
        for index in group:
            cursors[index] += 1
        members = group + before_start
        offset = batch.next_offset
    return Committed(batches, sorted(holders) if batches else [], majority)


def _place(nodes: Sequence[Node], committed: Committed) -> None:
    """Where each node stands against the committed log."""
    ours = {batch.base_offset: batch for batch in committed.batches}
    last = committed.last
    for index, node in enumerate(nodes):
        node.identical = index in committed.holders
        for batch in node.outline:
            if last is not None and batch.base_offset == last.base_offset and batch.epoch == last.epoch:
                node.holds_end = True
            if node.diverges_at is None and batch.base_offset < committed.end_offset:
                twin = ours.get(batch.base_offset)
                if twin is None or twin.identity != batch.identity:
                    node.diverges_at = batch.base_offset


def _replayed(nodes: Sequence[Node], committed: Committed) -> Node:
    """The node whose log the committed log's check replays."""
    candidates = [nodes[index] for index in committed.holders] or [node for node in nodes if node.outline]
    candidates = candidates or [node for node in nodes if node.snapshots]
    return min(candidates, key=lambda node: node.start_offset)


def _acked_on_nodes(
    nodes: Sequence[Node], committed: Committed, replayed: Node, journal: JournalPlan
) -> list[Violation]:
    """`quorum-acked-on-node` for the nodes holding the final committed offset but not the committed log."""
    strays = [node for node in nodes if node.holds_end and not node.identical]
    if not strays or not journal.entries:
        return []
    lost_committed = _lost(replayed, committed.end_offset, journal)
    found: list[Violation] = []
    for node in strays:
        found.extend(acked_on_node(node, _lost(node, committed.end_offset, journal), lost_committed))
    return found


def _lost(node: Node, until: int, journal: JournalPlan) -> set[tuple[str, str]]:
    """The acknowledged changes `node`'s log lacks up to `until`, judged as the committed log's check judges."""
    image = LogRules(Model(), ViolationSink())
    acked = AckedChanges(image)
    subscribers: list[Subscriber] = [acked]
    with LogReader(node.data_dir) as reader:
        Replay(reader, image, subscribers, until=until).run(journal)
    return acked.lost


def _notes(nodes: Sequence[Node], committed: Committed) -> list[str]:
    notes = [f"{node.label}: {note}" for node in nodes for note in node.notes]
    for node in nodes:
        if node.diverges_at is not None and not node.holds_end:
            notes.append(
                f"{node.label} leaves the committed log at offset {node.diverges_at}: "
                "a divergent tail, for its next leader to truncate"
            )
        elif not node.identical and node.end_offset < committed.end_offset and node.diverges_at is None:
            notes.append(f"{node.label} lags: its log ends at offset {node.end_offset}")
    given = {node.node_id for node in nodes}
    missing = [] if None in given else sorted(voter for voter in _newest_voters(nodes) if voter not in given)
    if missing:
        notes.append(
            f"the newest LeaderChange names voter(s) {missing} whose data dirs were not given: "
            "the majority counted is of the nodes given"
        )
    return notes


def _newest_voters(nodes: Sequence[Node]) -> list[int]:
    newest: tuple[int, list[int]] = (-1, [])
    for node in nodes:
        for batch in node.outline:
            if batch.leader_change is not None and batch.epoch > newest[0]:
                newest = (batch.epoch, [voter.voter_id for voter in batch.leader_change.voters])
    return newest[1]
