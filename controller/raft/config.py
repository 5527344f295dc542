"""A Raft node's configuration: who it is, who votes, and the timeouts (Kafka's `QuorumConfig`).

Rules:
- The voter set is static (`controller.quorum.voters`, kraft.version 0): a node whose id is not
  in it is an observer, which fetches but never votes nor stands.
- Defaults are Kafka's: `controller.quorum.election.timeout.ms` 1000, `fetch.timeout.ms` 2000,
  `election.backoff.max.ms` 1000, `retry.backoff.ms` 20, `request.timeout.ms` 2000, and the
  longest a leader holds a Fetch that has nothing new (`KafkaRaftClient.MAX_FETCH_WAIT_MS`) 500.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import NodeId


@dataclass(frozen=True, slots=True)
class RaftConfig:
    node_id: NodeId
    voters: frozenset[NodeId]
    cluster_id: str | None = None
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    retry_backoff_ms: int = 20
    request_timeout_ms: int = 2000
    fetch_max_wait_ms: int = 500

    def __post_init__(self) -> None:
        if not self.voters:
            raise ValueError("a quorum needs at least one voter")
        if self.election_timeout_ms <= 0 or self.fetch_timeout_ms <= 0:
            raise ValueError("the election and fetch timeouts must be positive")

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    @property
    def other_voters(self) -> tuple[NodeId, ...]:
        return tuple(sorted(voter for voter in self.voters if voter != self.node_id))
