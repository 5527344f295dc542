"""Raft's safety properties, checked as the simulated nodes act (tests/raft/sim.py).

- Election safety: at most one node becomes leader of an epoch.
- Log matching: an entry is identified by (offset, epoch): the same pair always holds the same
  payload and follows an entry of the same epoch, so two logs that share an entry share the
  whole prefix before it (checked at every append, and log against log at the end of a run).
- Leader completeness: a node that becomes leader of epoch E holds every entry committed in an
  earlier epoch (committed: below the high watermark some leader announced).
- State-machine safety: every high watermark a node announces covers the same entries, the
  committed prefix never changes, a follower's never passes what some leader committed, and no
  node announces a high watermark past its log's end or truncates a committed entry it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from controller.raft import NodeId

Entry = tuple[int, object]  # (epoch, payload)


class Violation(AssertionError):
    pass


class LogLike(Protocol):
    """What the checker reads of a simulated log (`sim.SimLog`): offsets below `start` are
    the snapshot's entries."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    def entry(self, offset: int) -> Entry: ...


@dataclass
class Checker:
    #: the epoch each leader was elected in
    leaders: dict[int, NodeId] = field(default_factory=dict)
    #: the committed prefix, offset by offset, and the epoch of the leader that committed each
    committed: list[Entry] = field(default_factory=list)
    commit_epochs: list[int] = field(default_factory=list)
    #: (offset, epoch) -> (payload, epoch of the entry before it; None at offset 0)
    identities: dict[tuple[int, int], tuple[object, int | None]] = field(default_factory=dict)

    def appended(self, node: NodeId, log: LogLike, first: int) -> None:
        for offset in range(max(first, log.start), log.end):
            epoch, payload = log.entry(offset)
            previous = log.entry(offset - 1)[0] if offset > 0 else None
            known = self.identities.setdefault((offset, epoch), (payload, previous))
            if known != (payload, previous):
                raise Violation(
                    f"log matching: node {node} holds {(payload, previous)} at ({offset}, {epoch}), another log {known}"
                )

    def became_leader(self, node: NodeId, epoch: int, log: LogLike) -> None:
        other = self.leaders.setdefault(epoch, node)
        if other != node:
            raise Violation(f"election safety: nodes {other} and {node} both lead epoch {epoch}")
        for offset, entry in enumerate(self.committed):
            if self.commit_epochs[offset] >= epoch:
                break
            if offset >= log.end or log.entry(offset) != entry:
                held = log.entry(offset) if offset < log.end else None
                raise Violation(
                    f"leader completeness: leader {node} of epoch {epoch} holds {held} at {offset}, committed {entry}"
                )

    def high_watermark(self, node: NodeId, log: LogLike, old: int | None, new: int, leader_epoch: int | None) -> None:
        if new > log.end:
            raise Violation(f"node {node}'s high watermark {new} passes its log end {log.end}")
        if old is not None and new < old:
            raise Violation(f"node {node}'s high watermark went back from {old} to {new}")
        if new > len(self.committed) and leader_epoch is None:
            raise Violation(f"follower {node}'s high watermark {new} passes every leader's {len(self.committed)}")
        for offset in range(old or 0, new):
            entry = log.entry(offset)
            if offset < len(self.committed):
                if entry != self.committed[offset]:
                    raise Violation(
                        f"state machine safety: node {node} commits {entry} at {offset}, "
                        f"committed before: {self.committed[offset]}"
                    )
            else:
                assert leader_epoch is not None
                self.committed.append(entry)
                self.commit_epochs.append(leader_epoch)

    def truncating(self, node: NodeId, log: LogLike, offset: int) -> None:
        for at in range(max(offset, log.start), min(log.end, len(self.committed))):
            if log.entry(at) == self.committed[at]:
                raise Violation(f"node {node} truncates to {offset}, dropping committed entry {at}")

    def snapshot_installed(self, node: NodeId, log: LogLike) -> None:
        for offset in range(min(log.start, len(self.committed))):
            if log.entry(offset) != self.committed[offset]:
                raise Violation(f"node {node} installed a snapshot that differs from the committed log at {offset}")
        if log.start > len(self.committed):
            raise Violation(f"node {node} installed a snapshot past the committed log: {log.start}")

    def logs_match(self, logs: Mapping[NodeId, LogLike]) -> None:
        """Log matching over whole logs: if two logs hold the same (offset, epoch), they agree on
        every offset before it that both hold."""
        items = sorted(logs.items())
        for index, (a, log_a) in enumerate(items):
            for b, log_b in items[index + 1 :]:
                low, high = 0, min(log_a.end, log_b.end)  # below a log's start: its snapshot
                last_common = None
                for offset in range(high - 1, low - 1, -1):
                    if log_a.entry(offset)[0] == log_b.entry(offset)[0]:
                        last_common = offset
                        break
                if last_common is None:
                    continue
                for offset in range(low, last_common + 1):
                    if log_a.entry(offset) != log_b.entry(offset):
                        raise Violation(
                            f"log matching: nodes {a} and {b} agree at {last_common} but not at {offset}: "
                            f"{log_a.entry(offset)} / {log_b.entry(offset)}"
                        )
