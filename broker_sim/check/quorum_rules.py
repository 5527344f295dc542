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
- The rules that follow the journal (`stale-controller-epoch`, `controller-epoch-leader`,
  `quorum-deposed-leader`, `quorum-stale-vote`, `quorum-divergent-tail`): `quorum_journal`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from broker_sim.journal import Entry

from .events import SnapshotRecords, Subscriber
from .journal_rules import JournalCheck
from .log import Batch, Outline, SnapshotFile
from .quorum_journal import ControllerEpochLeaders, QuorumTimeline, StaleControllerEpochs
from .rendering import render_entry
from .rules import LogRules
from .violations import Violation, ViolationSink

if TYPE_CHECKING:
    from .quorum import Committed, Node

#: the journal rules whose violation means an acknowledged change is not in a log
LOST_RULES = frozenset({"ack-lost", "registration-lost", "topic-lost"})


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


def quorum_subscribers() -> list[Subscriber]:
    """The quorum's rules that follow the replay of the committed log and its journal."""
    return [DeposedWrites(), StaleControllerEpochs(), ControllerEpochLeaders(), QuorumTimeline()]
