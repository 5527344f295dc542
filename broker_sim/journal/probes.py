"""The journal's entries on requests the fleet sends on purpose that a correct controller must
refuse: stale replays, a leader's ISR expansions on a stale view, the brokers' request probes
and the admin client's probes, each with its answer.

The fleet records the request and the answer; the checker decides whether the refusal was the
right one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class StaleReplay:
    """A request built with epochs the fleet knows are stale, sent on purpose, and its answer.

    `reason`: "previous-incarnation" (KIP-380: built before a bounce, carries the old broker epoch),
    "old-leader-epoch" (KIP-497: a deposed leader's ISR change), "old-partition-epoch" (a retry
    after the change was applied). `errors`: the top-level error, then each partition's error, in
    the answer's order; empty when no answer came (connection closed). `accepted`: any NONE in a
    place that would have changed state (the checker decides; a NONE for a request that changes
    nothing is allowed by semantics.md)."""

    kind: ClassVar[str] = "stale_replay"
    wall_ns: int
    broker: int
    api: str
    api_version: int
    reason: str
    stale_broker_epoch: int
    current_broker_epoch: int
    correlation_id: int
    errors: list[int]
    accepted: bool
    detail: dict[str, Any] = field(default_factory=dict)  # the partitions and epochs it named


@dataclass(frozen=True, slots=True)
class Probe:
    """A leader's ISR expansion built on a stale view of a follower, sent on purpose (KIP-841, KIP-903):
    the follower is fenced, shutting down or offline as far as the fleet knows, or named with its
    previous incarnation's broker epoch. `errors`: the answer's (top level, then the partition's);
    empty when no answer came. Acceptance is judged from the log (isr-admission) and, for v3, from
    the PartitionAcked entry the acceptance also writes (ack-member-epoch): between the fleet's view
    and the controller's decision the follower may have become eligible."""

    kind: ClassVar[str] = "probe"
    wall_ns: int
    broker: int
    api_version: int
    why: str  # "fenced", "shutting-down", "offline", "previous-epoch"
    topic_id: str
    partition: int
    follower: int
    member_epoch: int
    errors: list[int]


@dataclass(frozen=True, slots=True)
class RequestProbe:
    """A request a correct controller must refuse with the error semantics.md names, sent on
    purpose (a newer kind: older readers skip it; `broker_sim/model/probes.py` lists the probes),
    and its answer.

    `probe`: the kind ("follower", "non-replica", "unknown-topic", "heartbeat-unregistered", ...);
    `broker_epoch`: the sender's when it built the request; `errors`: the answer's top-level
    error, then each partition's, in the answer's order (empty: no answer came); `accepted`: a
    NONE at the top level and, where the answer has partitions, among them; `detail`: what the
    request named (topic, partition, epochs, ISR, the broker id it claimed, ...)."""

    kind: ClassVar[str] = "request_probe"
    wall_ns: int
    broker: int
    broker_epoch: int
    api: str
    api_version: int
    probe: str
    errors: list[int]
    accepted: bool
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AdminProbe:
    """A request of the fleet's admin client that a correct controller must refuse with the error
    semantics.md names (`broker_sim/model/admin_probes.py` lists the kinds), sent on
    purpose, and its answer. A kind of its own (not `RequestProbe`): no broker sends it, and the
    checker judges it apart (`broker_sim/check/admin_probe_rules.py`).

    `probe`: the kind ("create-taken", "delete-unknown", "elect-unclean-led", ...);
    `sent_wall_ns`: when the request was first sent (`wall_ns`: when its answer came); `errors`:
    the answer's top-level error (ElectLeaders v1+; 0 where the API or version has none), then one
    per topic (CreateTopics, DeleteTopics) or partition (ElectLeaders) in the answer's order (empty:
    no answer came); `accepted`: a NONE at the top level and among the others; `detail`: what the
    request named (topic, partition, replication factor, assignment, ...)."""

    kind: ClassVar[str] = "admin_probe"
    wall_ns: int
    sent_wall_ns: int
    api: str
    api_version: int
    probe: str
    errors: list[int]
    accepted: bool
    detail: dict[str, Any] = field(default_factory=dict)
