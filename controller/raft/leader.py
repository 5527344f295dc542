"""The leader's state: what it knows of each replica, its high watermark, check-quorum.

Rules (Kafka's `LeaderState`):
- Each replica that fetched validly has its fetch offset (its flushed log end) and the time of
  that fetch. Only voters count for the high watermark and for check-quorum; observers are
  tracked for DescribeQuorum only, in `Observers`: one that has not fetched for
  `OBSERVER_SESSION_TIMEOUT_MS` (Kafka's 5 minutes) is forgotten, and at most `MAX_OBSERVERS`
  are kept (the one that fetched longest ago goes first), so that fetches from ever new ids
  grow neither the leader's memory nor DescribeQuorum's answer without bound. It is updated in
  place (bookkeeping, not Raft state: a fetch from one of many observers costs no copy).
- The high watermark is the offset that a majority of the voters have reached, the leader
  counting its own *flushed* end offset; it is only set once it passes the epoch's start offset
  (the leader's LeaderChange batch must commit first: that makes every earlier entry of its log
  committed too), and it never goes back.
- Check-quorum: the leader resigns when a majority of the voters (itself included) has not
  fetched within `CHECK_QUORUM_TIMEOUT_FACTOR` x the fetch timeout. The timer restarts whenever
  enough distinct voters have fetched since it last restarted. A sole voter never resigns.
- The lease (`lease_holds`): no other leader can have been elected while a majority of the voters
  fetched within the fetch timeout, each fetch counted from its arrival (a held fetch included);
  the controller answers only within it.
- BeginQuorumEpoch goes to every voter that has not acknowledged the leader (by answering it or
  by fetching), at once and then every half fetch timeout.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .ids import Epoch, NodeId

CHECK_QUORUM_TIMEOUT_FACTOR = 1.5
#: Kafka's `LeaderState.OBSERVER_SESSION_TIMEOUT_MS`
OBSERVER_SESSION_TIMEOUT_MS = 300_000
#: the most observers a leader keeps track of
MAX_OBSERVERS = 1000


def check_quorum_timeout_ms(fetch_timeout_ms: int) -> int:
    return int(fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)


@dataclass(frozen=True, slots=True)
class ReplicaProgress:
    end_offset: int | None = None
    last_fetch_ms: int | None = None
    last_caught_up_ms: int | None = None


class Observers:
    """The observers that fetched lately, the one that fetched longest ago first."""

    def __init__(self) -> None:
        self._progress: OrderedDict[NodeId, ReplicaProgress] = OrderedDict()

    def get(self, replica: NodeId) -> ReplicaProgress | None:
        return self._progress.get(replica)

    def fetched(self, replica: NodeId, progress: ReplicaProgress, now_ms: int) -> None:
        self._progress[replica] = progress
        self._progress.move_to_end(replica)
        self._forget(now_ms)
        while len(self._progress) > MAX_OBSERVERS:
            self._progress.popitem(last=False)

    def active(self, now_ms: int) -> dict[NodeId, ReplicaProgress]:
        self._forget(now_ms)
        return dict(self._progress)

    def __len__(self) -> int:
        return len(self._progress)

    def _forget(self, now_ms: int) -> None:
        progress = self._progress
        while progress:
            oldest = next(iter(progress.values()))
            if oldest.last_fetch_ms is not None and oldest.last_fetch_ms > now_ms - OBSERVER_SESSION_TIMEOUT_MS:
                return
            progress.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Leader:
    epoch: Epoch
    local_id: NodeId
    voters: frozenset[NodeId]
    epoch_start_offset: int
    granting_voters: frozenset[NodeId]
    check_quorum_deadline_ms: int
    begin_epoch_due_ms: int
    high_watermark: int | None = None
    #: the voters' progress (a fetch replaces the mapping)
    progress: Mapping[NodeId, ReplicaProgress] = field(default_factory=dict)
    observers: Observers = field(default_factory=Observers, compare=False)
    acknowledged: frozenset[NodeId] = frozenset()
    fetched_voters: frozenset[NodeId] = frozenset()

    @classmethod
    def started(
        cls,
        epoch: Epoch,
        local_id: NodeId,
        voters: frozenset[NodeId],
        epoch_start_offset: int,
        granting_voters: frozenset[NodeId],
        now_ms: int,
        fetch_timeout_ms: int,
    ) -> Leader:
        return cls(
            epoch=epoch,
            local_id=local_id,
            voters=voters,
            epoch_start_offset=epoch_start_offset,
            granting_voters=granting_voters,
            check_quorum_deadline_ms=now_ms + check_quorum_timeout_ms(fetch_timeout_ms),
            begin_epoch_due_ms=now_ms,
            progress={},
            acknowledged=frozenset({local_id}),
        )

    @property
    def unacknowledged(self) -> frozenset[NodeId]:
        return self.voters - self.acknowledged

    def fetched(self, replica: NodeId, fetch_offset: int, leader_end_offset: int, now_ms: int) -> Leader:
        """A valid Fetch from `replica`: its log ends at `fetch_offset` (flushed)."""
        voter = replica in self.voters
        old = (self.progress.get(replica) if voter else self.observers.get(replica)) or ReplicaProgress()
        caught_up = now_ms if fetch_offset >= leader_end_offset else old.last_caught_up_ms
        # a held fetch is stamped with its arrival: a later one may have been counted already
        last_fetch = now_ms if old.last_fetch_ms is None else max(old.last_fetch_ms, now_ms)
        updated = ReplicaProgress(fetch_offset, last_fetch, caught_up)
        if not voter:
            self.observers.fetched(replica, updated, now_ms)
            return self
        progress = dict(self.progress)
        progress[replica] = updated
        return replace(self, progress=progress, acknowledged=self.acknowledged | {replica})

    def voter_followed(self, replica: NodeId, now_ms: int, fetch_timeout_ms: int) -> Leader:
        """Check-quorum's bookkeeping for a Fetch or FetchSnapshot from a voter."""
        if replica not in self.voters or replica == self.local_id:
            return self
        fetched = self.fetched_voters | {replica}
        # the leader is a voter and counts itself: a majority of the others is one fewer
        if len(fetched) >= len(self.voters) // 2:
            deadline = max(self.check_quorum_deadline_ms, now_ms + check_quorum_timeout_ms(fetch_timeout_ms))
            return replace(self, fetched_voters=frozenset(), check_quorum_deadline_ms=deadline)
        return replace(self, fetched_voters=fetched)

    def lease_holds(self, now_ms: int, fetch_timeout_ms: int, counted_from_ms: int = -1) -> bool:
        """Whether no other leader can have been elected yet: a majority of the voters (this one
        counting) fetched from it within the fetch timeout, each fetch stamped with its arrival.
        A voter that fetched successfully neither stands nor grants a pre-vote until its fetch
        timeout has passed since it received the answer (KIP-996), which is after the fetch
        arrived here, so the bound is safe (clocks running at the same rate). Fetches that
        arrived at or before `counted_from_ms` (the shell's: the end of a stall of its event loop,
        through which they may have waited in a socket) do not count."""
        if len(self.voters) == 1:
            return True

        def last_fetch(voter: NodeId) -> int:
            if voter == self.local_id:
                return now_ms
            fetched = self.progress.get(voter, ReplicaProgress()).last_fetch_ms
            return fetched if fetched is not None and fetched > counted_from_ms else -1

        fetched = sorted(last_fetch(voter) for voter in self.voters)
        majority_fetched = fetched[(len(fetched) - 1) // 2]  # a majority fetched at or after it
        return majority_fetched >= 0 and majority_fetched + fetch_timeout_ms > now_ms

    def check_quorum_expired(self, now_ms: int) -> bool:
        return len(self.voters) > 1 and now_ms >= self.check_quorum_deadline_ms

    def majority_offset(self, local_flushed_end: int) -> int | None:
        """The largest offset that a majority of the voters have reached (None: not known)."""
        ends: list[int | None] = [
            local_flushed_end if voter == self.local_id else self.progress.get(voter, ReplicaProgress()).end_offset
            for voter in self.voters
        ]
        known = sorted((end for end in ends if end is not None), reverse=True)
        index = len(self.voters) // 2
        return known[index] if index < len(known) else None

    def with_high_watermark(self, local_flushed_end: int) -> Leader:
        """The high watermark moved forward, if a majority allows it (else unchanged)."""
        offset = self.majority_offset(local_flushed_end)
        if offset is None or offset <= self.epoch_start_offset:
            return self
        if self.high_watermark is not None and offset <= self.high_watermark:
            return self
        return replace(self, high_watermark=offset)

    def successors(self) -> tuple[NodeId, ...]:
        """The other voters, the furthest fetched first (then by id): Kafka's
        `nonLeaderVotersByDescendingFetchOffset`, EndQuorumEpoch's preferred successors."""
        others = [voter for voter in self.voters if voter != self.local_id]

        def fetched_end(voter: NodeId) -> int:
            end = self.progress.get(voter, ReplicaProgress()).end_offset
            return -1 if end is None else end

        return tuple(sorted(others, key=lambda voter: (-fetched_end(voter), voter)))
