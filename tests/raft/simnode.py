"""The simulated nodes' data (tests/raft/sim.py): the run's timeouts and fault rates, a node's
log as the harness keeps it (what survives a crash: the flushed part and the snapshot), its
quorum-state file, and the actions it has yet to execute.

Rules: a log holds (epoch, payload) entries; below its start, the snapshot's entries stand for the
offsets it covers, so that every offset of a log can be compared with every other log's.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from controller.raft import (
    Action,
    Batch,
    ElectionState,
    Epoch,
    EpochStart,
    LogView,
    NodeId,
    OffsetAndEpoch,
    RaftConfig,
    RaftNode,
)

from .invariants import Entry

TIMING = {
    "election_timeout_ms": 100,
    "fetch_timeout_ms": 200,
    "request_timeout_ms": 60,
    "retry_backoff_ms": 10,
    "fetch_max_wait_ms": 50,
    "election_backoff_max_ms": 100,
}
MAX_RECORDS_PER_FETCH = 12


@dataclass(frozen=True)
class Faults:
    loss: float = 0.05
    duplicate: float = 0.03
    max_delay_ms: int = 8
    crash_every_ms: int | None = 300
    partition_every_ms: int | None = 200
    snapshot_every_ms: int | None = 250
    append_every_ms: int = 12
    #: how often a crash or a partition picks the leader (when there is one) rather than anyone
    leader_bias: float = 0.5
    #: how often a node crashes right after a risky moment: it granted a vote (is it durable?), or
    #: it leads and announced a high watermark with part of its log unflushed (was it counted?)
    sudden_crash: float = 0.1
    #: how often a flush is slow (15-60 ms instead of 1-12)
    slow_flush: float = 0.15


@dataclass
class SimLog:
    """A node's log as the harness keeps it: entries (epoch, payload) from `start`, the flushed
    end, and the snapshot below `start` (its id and the entries it stands for)."""

    start: int = 0
    entries: list[Entry] = field(default_factory=list)
    flushed_end: int = 0
    snapshot: OffsetAndEpoch | None = None
    snapshot_entries: tuple[Entry, ...] = ()

    @property
    def end(self) -> int:
        return self.start + len(self.entries)

    def entry(self, offset: int) -> Entry:
        if offset < self.start:
            return self.snapshot_entries[offset]
        return self.entries[offset - self.start]

    def append(self, batch: Batch) -> None:
        assert batch.base_offset == self.end, (batch, self.end)
        count = batch.last_offset - batch.base_offset + 1
        payloads = batch.payload if isinstance(batch.payload, tuple) else (batch.payload,) * count
        assert len(payloads) == count
        self.entries.extend((batch.epoch, payload) for payload in payloads)

    def truncate(self, end: int) -> None:
        del self.entries[end - self.start :]
        self.flushed_end = min(self.flushed_end, end)

    def crash(self) -> None:
        self.truncate(self.flushed_end)

    def batches_from(self, offset: int) -> tuple[Batch, ...]:
        """What a leader's shell would send from `offset`: runs of one epoch, a bounded amount."""
        batches: list[Batch] = []
        end = min(self.end, offset + MAX_RECORDS_PER_FETCH)
        while offset < end:
            epoch = self.entries[offset - self.start][0]
            last = offset
            while last + 1 < end and self.entries[last + 1 - self.start][0] == epoch:
                last += 1
            payloads = tuple(self.entries[at - self.start][1] for at in range(offset, last + 1))
            batches.append(Batch(offset, last, Epoch(epoch), payloads))
            offset = last + 1
        return tuple(batches)

    def take_snapshot(self, offset: int) -> OffsetAndEpoch:
        snapshot = OffsetAndEpoch(offset, Epoch(self.entry(offset - 1)[0]))
        self.snapshot_entries = tuple(self.entry(at) for at in range(offset))
        del self.entries[: offset - self.start]
        self.start, self.snapshot = offset, snapshot
        self.flushed_end = max(self.flushed_end, offset)
        return snapshot

    def install(self, snapshot: OffsetAndEpoch, entries: tuple[Entry, ...]) -> None:
        self.start, self.entries, self.flushed_end = snapshot.offset, [], snapshot.offset
        self.snapshot, self.snapshot_entries = snapshot, entries

    def view(self) -> LogView:
        epochs: list[EpochStart] = []
        for index, (epoch, _) in enumerate(self.entries):
            if not epochs or epochs[-1].epoch != epoch:
                epochs.append(EpochStart(Epoch(epoch), self.start + index))
        return LogView.recovered(self.end, tuple(epochs), self.snapshot)


@dataclass
class SimNode:
    node_id: NodeId
    config: RaftConfig
    log: SimLog = field(default_factory=SimLog)
    election: ElectionState | None = None  # the quorum-state file
    core: RaftNode | None = None
    incarnation: int = 0
    pending: deque[Action] = field(default_factory=deque)
    persisting: ElectionState | None = None
    flush_due: bool = False
    hw: int | None = None
    leading_epoch: int | None = None
    epoch_start: int = 0  # the offset of the LeaderChange of the epoch it leads
    tick_at: int | None = None


@dataclass
class Report:
    seed: int
    stats: Counter[str]
    converged_at_ms: int | None
    max_epoch: int
    committed: int
