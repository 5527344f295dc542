"""Kafka's Raft invariants (its RaftEventSimulationTest's), held by every node of a simulated
quorum after every step of the node's Raft core.

Rules:
- Each node's Raft driver calls `step(core, actions)` whenever its core took an event (a
  message, an answer, a tick, a flush, an append of the leader's): the core's state, its log as it
  sees it (`LogView`: start, end, the epoch each offset was written in) and its high watermark
  are read there, before the actions run. A node keeps its last view across a crash (its log is
  on its disk) until its next incarnation starts from what it recovered.
- The invariants, each violation a line that starts with its name in brackets:
  - `raft-monotonic-epoch`: a node's epoch never goes back, across restarts (its quorum-state),
    but for an epoch taken while its disk failed (`disk_failing`): the driver writes the election
    state before it acts on it, that write failed, and the epoch may die with the incarnation.
  - `raft-single-leader`: every node that knows a leader of an epoch knows the same one.
  - `raft-monotonic-high-watermark`: a leader's high watermark is never below one that any
    leader announced before.
  - `raft-majority-reached-high-watermark`: a majority of the voters' logs (as last seen, a down
    node's included) reach a leader's high watermark and hold its last committed entry in the
    same epoch as the leader.
  - `raft-committed-entry-kept`: every node's log below its own high watermark holds the
    committed entries (offset and epoch) and no node truncates below its high watermark; a node
    that becomes leader holds every entry committed before (leader completeness).
  - `raft-leader-never-loads-snapshot`: a leader (or a resigned one) never installs a snapshot.
  Kafka's `SnapshotAtLogStart` holds by construction (`LogView` refuses a snapshot elsewhere).
- `relaxed`: the scenario loses a node's persistent state on purpose, as Kafka's
  `canRecoverFromSingleNodeCommittedDataLoss`: the epoch's and the majority's invariants are off
  (Kafka turns off the same two), the rest hold.
- At most `MAX_VIOLATIONS` are kept: a broken invariant usually breaks again at every step.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from controller.raft import Action, InstallSnapshot, RaftNode
from controller.raft.leader import Leader
from controller.raft.log import LogView
from controller.raft.state import Candidate, Prospective, Resigned

MAX_VIOLATIONS = 20
UNKNOWN = -1  # a committed run whose epoch the watch did not see (in a leader's snapshot)
UNKNOWN_ABOVE = 1 << 62  # sorts after every epoch, for the runs' bisection


def epoch_at(view: LogView, offset: int) -> int | None:
    """The epoch the entry at `offset` was written in (None: not in the log, or in its snapshot)."""
    if not view.start_offset <= offset < view.end_offset or not view.epochs:
        return None
    starts = [entry.start_offset for entry in view.epochs]
    index = bisect.bisect_right(starts, offset) - 1
    return view.epochs[index].epoch if index >= 0 else None


@dataclass
class _Node:
    view: LogView = field(default_factory=LogView)
    epoch: int = 0
    #: its epoch when its disk began to fail this incarnation (None: it did not)
    epoch_at_disk_failure: int | None = None
    high_watermark: int | None = None
    leading: int | None = None  # the epoch it leads (None: it does not)
    electing: bool = False  # a prospective or candidate: it asks for (pre-)votes


class RaftWatch:
    def __init__(self, voters: Sequence[int], now: Callable[[], float], *, relaxed: bool = False) -> None:
        self.voters = tuple(voters)
        self.now = now
        self.relaxed = relaxed
        self.nodes = {voter: _Node() for voter in self.voters}
        #: the leader each epoch had, as the first node to know it said
        self.leaders: dict[int, int] = {}
        #: the committed entries' epochs, run by run: (start offset, epoch), up to `committed_end`
        self.committed: list[tuple[int, int]] = []
        self.committed_end = 0
        self.high_watermark = 0  # the highest any leader announced
        self.violations: list[str] = []

    # ------------------------------------------------------------------ what the scenarios ask
    def leader(self) -> tuple[int, int] | None:
        """(node, epoch) of the newest leader among the nodes, if one leads now."""
        found = [(node.leading, node_id) for node_id, node in self.nodes.items() if node.leading is not None]
        if not found:
            return None
        epoch, node_id = max(found)
        return node_id, epoch

    def electing(self) -> list[int]:
        """The nodes asking for (pre-)votes now."""
        return [node_id for node_id, node in self.nodes.items() if node.electing]

    def high_watermark_of(self, node: int) -> int:
        return self.nodes[node].high_watermark or 0

    def forget(self, node: int) -> None:
        """`node` lost its persistent state (see `relaxed`): its next incarnation starts afresh."""
        self.nodes[node] = _Node()

    def disk_failing(self, node: int) -> None:
        """`node`'s disk fails from now on: an epoch it takes now may never be written."""
        state = self.nodes[node]
        if state.epoch_at_disk_failure is None:
            state.epoch_at_disk_failure = state.epoch

    def down(self, node: int) -> None:
        """`node` crashed: it leads nothing and knows no high watermark (its log stays as it was);
        its next incarnation is held to its epoch, or to the one it had when its disk failed."""
        state = self.nodes[node]
        if state.epoch_at_disk_failure is not None:
            state.epoch, state.epoch_at_disk_failure = state.epoch_at_disk_failure, None
        state.leading = None
        state.electing = False
        state.high_watermark = None

    # ------------------------------------------------------------------ a step
    def step(self, core: RaftNode, actions: Sequence[Action]) -> None:
        node_id = int(core.node_id)
        node = self.nodes[node_id]
        state = core.state
        epoch = int(core.epoch)
        leading = isinstance(state, Leader)
        view, high_watermark = core.log, core.high_watermark
        if epoch < node.epoch and not self.relaxed:
            self._violation("raft-monotonic-epoch", f"node {node_id}'s epoch went back from {node.epoch} to {epoch}")
        leader_id = core.leader_id
        if leader_id is not None:
            known = self.leaders.setdefault(epoch, int(leader_id))
            if known != leader_id:
                self._violation(
                    "raft-single-leader", f"node {node_id} knows {leader_id} as epoch {epoch}'s leader, another {known}"
                )
        if node.view is not view and high_watermark is not None and view.end_offset < high_watermark:
            self._violation(
                "raft-committed-entry-kept",
                f"node {node_id}'s log ends at {view.end_offset}, below its high watermark {high_watermark}",
            )
        if leading and node.leading != epoch:
            self._holds_committed(node_id, view, self.committed_end, f"became the leader of epoch {epoch}")
        node.view, node.epoch = view, max(node.epoch, epoch)
        node.leading = epoch if leading else None
        node.electing = isinstance(state, Prospective | Candidate)
        if high_watermark is not None and high_watermark != node.high_watermark:
            node.high_watermark = high_watermark
            if leading:
                self._leader_high_watermark(node_id, view, high_watermark)
            self._holds_committed(node_id, view, min(high_watermark, self.committed_end), "has its high watermark")
        if isinstance(state, Leader | Resigned) and any(isinstance(action, InstallSnapshot) for action in actions):
            self._violation("raft-leader-never-loads-snapshot", f"node {node_id} installs a snapshot as a leader")

    def _leader_high_watermark(self, node_id: int, view: LogView, high_watermark: int) -> None:
        if high_watermark < self.high_watermark:
            self._violation(
                "raft-monotonic-high-watermark",
                f"leader {node_id}'s high watermark {high_watermark} is below {self.high_watermark}, announced before",
            )
        self.high_watermark = max(self.high_watermark, high_watermark)
        last = epoch_at(view, high_watermark - 1) if high_watermark > 0 else None
        if not self.relaxed and high_watermark > 0:
            reached = [
                voter
                for voter, other in self.nodes.items()
                if other.view.end_offset >= high_watermark
                and (last is None or epoch_at(other.view, high_watermark - 1) in (last, None))
            ]
            if len(reached) * 2 <= len(self.voters):
                self._violation(
                    "raft-majority-reached-high-watermark",
                    f"leader {node_id}'s high watermark {high_watermark} is in the logs of voters {reached} only",
                )
        self._extend_committed(view, high_watermark)

    def _extend_committed(self, view: LogView, high_watermark: int) -> None:
        """The committed runs carried up to `high_watermark` with the leader's epochs (an offset in
        the leader's snapshot: committed, its epoch unknown here, a run of epoch `UNKNOWN`)."""
        if high_watermark <= self.committed_end:
            return
        if view.start_offset > self.committed_end:
            self._run(self.committed_end, UNKNOWN)
        for index, entry in enumerate(view.epochs):
            run_end = view.epochs[index + 1].start_offset if index + 1 < len(view.epochs) else view.end_offset
            low, high = max(entry.start_offset, self.committed_end), min(run_end, high_watermark)
            if low < high:
                self._run(low, entry.epoch)
        self.committed_end = high_watermark

    def _run(self, start: int, epoch: int) -> None:
        if not self.committed or self.committed[-1][1] != epoch:
            self.committed.append((start, epoch))

    def _committed_epoch(self, offset: int) -> int | None:
        index = bisect.bisect_right(self.committed, (offset, UNKNOWN_ABOVE)) - 1
        if index < 0 or offset >= self.committed_end or self.committed[index][1] == UNKNOWN:
            return None
        return self.committed[index][1]

    def _holds_committed(self, node_id: int, view: LogView, end: int, when: str) -> None:
        """`node_id`'s log holds the committed entries below `end` (those in its log: below its start, its snapshot)."""
        if view.end_offset < end and view.start_offset < end:
            self._violation(
                "raft-committed-entry-kept",
                f"node {node_id} {when}, its log ends at {view.end_offset}, committed {end}",
            )
        # compare run starts: both sides change epoch only at a run start
        points = {view.start_offset} | {entry.start_offset for entry in view.epochs} | {s for s, _ in self.committed}
        for offset in sorted(points):
            if offset >= min(end, view.end_offset):
                break
            if offset < view.start_offset:
                continue
            mine, committed = epoch_at(view, offset), self._committed_epoch(offset)
            if committed is not None and mine is not None and mine != committed:
                self._violation(
                    "raft-committed-entry-kept",
                    f"node {node_id} {when}, its entry at {offset} is of epoch {mine}, committed: of {committed}",
                )
                return

    def _violation(self, rule: str, what: str) -> None:
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append(f"[{rule}] {what} (at {self.now():.4f} s)")
