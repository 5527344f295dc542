"""The leader's held fetches (Kafka's fetch purgatory): a valid Fetch with nothing new waits for
records, a new high watermark, or its deadline.

Rules:
- A Fetch is held at most its own max wait, capped at `fetch_max_wait_ms` (Kafka's 500 ms).
- Held fetches are answered (`controller.raft.node.RaftNode.complete_parked`) as a leader answers
  any valid Fetch, when records or a new high watermark come (all of them) or as their deadlines
  pass; a node that stops leading answers each NOT_LEADER_OR_FOLLOWER. The replica's progress is
  stamped with the fetch's arrival, never its answer: if the answer is lost, the follower's fetch
  timer still runs from its previous answer, and a later stamp would stretch the leader's lease
  past the moment the follower may stand.
- At most one per (source, correlation id); they are bounded by the connections that sent them
  (each connection has one request in flight).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import NodeId
from .messages import FetchRequest


@dataclass(frozen=True, slots=True)
class ParkedFetch:
    source: NodeId
    correlation_id: int
    request: FetchRequest
    #: when it arrived: the replica's progress is stamped with this time, not the answer's
    arrived_ms: int
    deadline_ms: int


class Purgatory:
    def __init__(self) -> None:
        self._held: dict[tuple[NodeId, int], ParkedFetch] = {}

    def park(self, source: NodeId, correlation_id: int, request: FetchRequest, now_ms: int, max_wait_ms: int) -> None:
        wait = min(request.max_wait_ms, max_wait_ms)
        self._held[(source, correlation_id)] = ParkedFetch(source, correlation_id, request, now_ms, now_ms + wait)

    def take(self, now_ms: int, *, only_expired: bool = False) -> list[ParkedFetch]:
        """The held fetches that are due (all of them, or those past their deadline), released."""
        due = [held for held in self._held.values() if not only_expired or held.deadline_ms <= now_ms]
        for held in due:
            del self._held[(held.source, held.correlation_id)]
        return due

    def deadlines(self) -> list[int]:
        return [held.deadline_ms for held in self._held.values()]

    def copy(self) -> Purgatory:
        copied = Purgatory()
        copied._held = dict(self._held)
        return copied

    def __len__(self) -> int:
        return len(self._held)
