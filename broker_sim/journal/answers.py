"""The journal's entries on the controller's answers to the fleet's own requests: AlterPartition
acknowledgements, the admin's creations, deletions and elections, AlterReplicaState, and answers that
broke the protocol.

Each records what was asked and what the controller answered; the checker holds the answers
against the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class TopicCreated:
    """A CreateTopics topic answered NONE."""

    kind: ClassVar[str] = "topic_created"
    wall_ns: int
    topic: str
    topic_id: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True, slots=True)
class PartitionAcked:
    """A partition of an AlterPartition answered NONE: the controller says this state is committed.

    `requested_isr` and `member_epochs` are what the leader asked (member_epochs: v3's broker epochs
    per ISR member, in the same order; empty before v3); the other fields are the answer."""

    kind: ClassVar[str] = "partition_acked"
    wall_ns: int
    broker: int
    broker_epoch: int
    api_version: int
    topic_id: str
    partition: int
    requested_isr: list[int]
    member_epochs: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]


@dataclass(frozen=True, slots=True)
class BadAnswer:
    """An answer that broke the protocol: undecodable, wrong correlation id, wrong shape."""

    kind: ClassVar[str] = "bad_answer"
    wall_ns: int
    broker: int
    api: str
    api_version: int
    correlation_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class DeleteAnswered:
    """The admin's own DeleteTopics of a topic it created (a chaos scratch topic) and its answer for
    that topic (a newer kind). `topic_id`: as the admin knew it ("" if it did not);
    `by_id`: v6 named it by id; `error`: the answer's error for the topic, -1 if it named none."""

    kind: ClassVar[str] = "delete_answer"
    wall_ns: int
    sent_wall_ns: int
    api_version: int
    topic: str
    topic_id: str
    by_id: bool
    error: int


@dataclass(frozen=True, slots=True)
class CreateAnswered:
    """The admin's own CreateTopics of one of its topics (a fleet or scratch topic) and its answer
    for that topic. `replicas`: every broker a manual assignment names, in first-named order (none
    when the controller places the replicas); `error`: the answer's error for the topic;
    `replication_factor`: the factor asked of the controller's placement (-1: its default; 0: a
    manual assignment)."""

    kind: ClassVar[str] = "create_answer"
    wall_ns: int
    sent_wall_ns: int
    api_version: int
    topic: str
    replicas: list[int]
    error: int
    replication_factor: int = 0


@dataclass(frozen=True, slots=True)
class ElectAnswered:
    """The admin's own ElectLeaders (chaos's preferred elections, not a probe) and its answer:
    `election_type` (0 PREFERRED, 1 UNCLEAN); `error`: the answer's top-level error (0 where the
    version has none); `results`: [topic, partition, error] for each partition of the answer, in
    its order."""

    kind: ClassVar[str] = "elect_answer"
    wall_ns: int
    sent_wall_ns: int
    api_version: int
    election_type: int
    error: int
    results: list[list[Any]]


@dataclass(frozen=True, slots=True)
class ReplicaStateAnswered:
    """An AlterReplicaState of a broker's own replicas (`new_state` 1 OFFLINE: their log dir failed;
    2 ONLINE: it was repaired) and its answer: `replicas` ([topic, partition], as asked), `errors`
    the top-level error then one per replica in the same order (-1: missing from the answer)."""

    kind: ClassVar[str] = "replica_state_answer"
    wall_ns: int
    sent_wall_ns: int
    broker: int
    broker_epoch: int
    api_version: int
    new_state: int
    replicas: list[list[Any]]
    errors: list[int]
