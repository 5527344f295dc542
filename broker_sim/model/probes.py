"""Request probes: requests a real peer could send that a correct controller must refuse
with the exact error semantics.md names, sent on purpose in chaos and journalled with their answer.
This module names the kinds, holds what a probe is (`ProbePlan`) and what it is built from
(`Knowledge`), and judges the answers: what the builders (by API: `alter_partition_probes`,
`lifecycle_probes`, `replica_state_probes`, each listing its kinds and the rule each provokes), the
pacing (`request_probes`) and the broker share.

Rules:
- The kinds (`KINDS`), each built from what the broker knows when it builds it, at the version it
  negotiated for the API (the fleet spreads versions over its brokers, so every version is
  probed), on its own broker id and current epoch unless said otherwise.
- BrokerHeartbeat "heartbeat-unregistered", ControlledShutdown "shutdown-unregistered",
  AlterPartition "alter-partition-unregistered" and AlterReplicaState "replica-state-unregistered"
  (naming a partition it hosts): a broker id no broker registers (`unregistered_id`): negative
  (refused at registration), or `UNREGISTERED_BASE` and up. A partition index no topic has:
  `UNKNOWN_PARTITION` and up; a topic name and id no topic has: `unknown_names`.
- "registration-duplicate" (`lifecycle_probes`): the plan keeps when the heartbeat it relies on was
  sent (`ProbePlan.heard_at`), and the answer's facts (`answer_facts`) say how long after it the
  answer came: the checker blames an acceptance only when that is within the session timeout and
  the log has not fenced the incarnation first. An accepted one replaced the broker's
  registration: the broker registers its own incarnation again at once (`BrokerModel`), so that
  nothing it sends with the replaced epoch is judged.
- A probe built on epochs may meet newer ones at the controller (a follower's view lags; the
  leader's committed epochs may have moved): which answers are right is the checker's
  (`broker_sim.check.probe_answers.wrong_probe_answer`), not the fleet's; the fleet records facts.
- `judge`: the answer's errors (top level, then each partition's in the answer's order) and
  whether it was accepted: NONE at the top level, and for an answer with partitions, a NONE among
  them (for "partition-twice", at a later naming: the first changes nothing). The kinds whose
  right answer is NONE ("alter-partition-empty", "replica-state-no-op", `NONE_IS_RIGHT`) are
  never accepted: their errors are judged. `answer_facts`: what else of the answer the checker
  needs (the number of topics of an empty request's answer, and of a "partition-twice" answer;
  the time since the last heartbeat and the granted epoch of an accepted duplicate
  registration), added to the journalled detail.
  An answer saying NOT_CONTROLLER (`judges_nothing`: at the top level for
  "alter-partition-newer-epoch", whose partition's NOT_CONTROLLER is row b's answer; anywhere for
  the others) judged nothing: the probe goes again (`request_probes`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownResponse
from protocol.spec import Data

from .answers import not_controller
from .leadership import Led
from .views import PartitionView

FOLLOWER = "follower"
NON_REPLICA = "non-replica"
DUPLICATE = "duplicate"
NEGATIVE_ID = "negative-id"
WITHOUT_LEADER = "without-leader"
RECOVERY_ROLLBACK = "recovery-rollback"
RECOVERING_ISR = "recovering-isr"
RECOVERY_BYTE = "recovery-byte"
UNKNOWN_TOPIC = "unknown-topic"
UNKNOWN_PARTITION_KIND = "unknown-partition"
HEARTBEAT_UNREGISTERED = "heartbeat-unregistered"
SHUTDOWN_UNREGISTERED = "shutdown-unregistered"
REGISTRATION_CLUSTER_ID = "registration-cluster-id"
REGISTRATION_NEGATIVE_ID = "registration-negative-id"
REPLICA_STATE_UNKNOWN_STATE = "replica-state-unknown-state"
REPLICA_STATE_UNKNOWN_TOPIC = "replica-state-unknown-topic"
REPLICA_STATE_UNKNOWN_PARTITION = "replica-state-unknown-partition"
PARTITION_TWICE = "partition-twice"
ALTER_PARTITION_UNREGISTERED = "alter-partition-unregistered"
REPLICA_STATE_UNREGISTERED = "replica-state-unregistered"
ALTER_PARTITION_EMPTY = "alter-partition-empty"
ALTER_PARTITION_NEWER = "alter-partition-newer-epoch"
REPLICA_STATE_NO_OP = "replica-state-no-op"
REGISTRATION_DUPLICATE = "registration-duplicate"

#: every kind, in the order a broker cycles through them (from its seeded offset)
KINDS = (
    FOLLOWER,
    NON_REPLICA,
    HEARTBEAT_UNREGISTERED,
    DUPLICATE,
    UNKNOWN_TOPIC,
    RECOVERY_ROLLBACK,
    FOLLOWER,
    NEGATIVE_ID,
    SHUTDOWN_UNREGISTERED,
    WITHOUT_LEADER,
    REPLICA_STATE_UNKNOWN_STATE,
    NON_REPLICA,
    RECOVERING_ISR,
    UNKNOWN_PARTITION_KIND,
    REGISTRATION_CLUSTER_ID,
    RECOVERY_BYTE,
    REPLICA_STATE_UNKNOWN_TOPIC,
    PARTITION_TWICE,
    REGISTRATION_NEGATIVE_ID,
    REPLICA_STATE_UNKNOWN_PARTITION,
    ALTER_PARTITION_UNREGISTERED,
    REPLICA_STATE_UNREGISTERED,
    ALTER_PARTITION_EMPTY,
    REGISTRATION_DUPLICATE,
    ALTER_PARTITION_NEWER,
    REPLICA_STATE_NO_OP,
)
#: kinds whose right answer is NONE: never "accepted" (`judge`)
NONE_IS_RIGHT = frozenset({ALTER_PARTITION_EMPTY, REPLICA_STATE_NO_OP})
#: broker ids from here up are never registered by a fleet (its ids stay below, docs/fleet/decisions.md: ids past
#: Kafka's int32 are refused, and no fleet of this project starts that high)
UNREGISTERED_BASE = 2_000_000_000
UNKNOWN_PARTITION = 1 << 20  # no topic of a fleet has this many partitions


@dataclass(frozen=True, slots=True)
class ProbePlan:
    probe: str  # one of KINDS
    api_key: int
    version: int
    body: Data
    broker_epoch: int  # the sender's, when built (-1: none)
    detail: dict[str, Any] = field(default_factory=dict)
    heard_at: float | None = None  # "registration-duplicate": when the last heartbeat it relies on was sent


@dataclass(frozen=True, slots=True)
class Knowledge:
    """What the broker knows when it builds a probe."""

    broker_id: int
    broker_epoch: int
    versions: Mapping[int, int]  # negotiated, by api key
    cluster_id: str
    led: Mapping[tuple[str, int], Led]  # the partitions it leads, as committed
    hosted: Sequence[PartitionView]  # its listener's views of the replicas it hosts, in key order
    topic_id: Callable[[str, uuid.UUID], uuid.UUID]  # (name, id a view gave) -> id (ZERO_UUID: unknown)
    now: float = 0.0
    #: the send time of the last heartbeat answered NONE and unfenced, while the broker is ACTIVE and
    #: not shutting down (None otherwise); with the session timeout, for "registration-duplicate"
    heard_at: float | None = None
    session_timeout_s: float = 0.0
    #: (topic, partition) -> the state (OFFLINE, ONLINE) the controller surely holds for a hosted replica
    replica_states: Mapping[tuple[str, int], int] = field(default_factory=dict)


#: a kind's builder: (kind, the probes' rng, what the broker knows) -> its probe, or None when it
#: cannot build one now
Builder = Callable[[str, random.Random, Knowledge], ProbePlan | None]


def judge(response: Data, probe: str = "") -> tuple[list[int], bool]:
    """(errors: top level, then each partition's; accepted: see the module rules)."""
    right_none = probe in NONE_IS_RIGHT
    if isinstance(response, (ControlledShutdownResponse, BrokerHeartbeatResponse, BrokerRegistrationResponse)):
        return [response.error_code], response.error_code == ErrorCode.NONE and not right_none
    if isinstance(response, (AlterPartitionResponse, AlterReplicaStateResponse)):
        codes = [p.error_code for t in response.topics for p in t.partitions]
        deciding = codes[1:] if probe == PARTITION_TWICE else codes
        accepted = response.error_code == ErrorCode.NONE and ErrorCode.NONE in deciding and not right_none
        return [response.error_code, *codes], accepted
    raise TypeError(f"no probe answers with {type(response).__name__}")


def judges_nothing(response: Data, probe: str = "") -> bool:
    """Whether the answer says NOT_CONTROLLER where it means "not the active controller" (see the
    module rules): a partition's NOT_CONTROLLER is row b's answer to "alter-partition-newer-epoch"."""
    if probe == ALTER_PARTITION_NEWER:
        return getattr(response, "error_code", 0) == ErrorCode.NOT_CONTROLLER
    return not_controller(response)


def answer_facts(plan: ProbePlan, response: Data, t: float) -> dict[str, Any]:
    """What the checker needs of an answer besides its errors (see the module rules), for the detail."""
    if plan.probe in (ALTER_PARTITION_EMPTY, PARTITION_TWICE) and isinstance(response, AlterPartitionResponse):
        return {"answer_topics": len(response.topics)}
    if plan.probe == REGISTRATION_DUPLICATE and isinstance(response, BrokerRegistrationResponse):
        facts: dict[str, Any] = {}
        if plan.heard_at is not None:
            facts["answered_ms_after_heard"] = round((t - plan.heard_at) * 1000)
        if response.error_code == ErrorCode.NONE:
            facts["granted_broker_epoch"] = int(response.broker_epoch)
        return facts
    return {}


def unregistered_id(rng: random.Random) -> int:
    """A broker id that no broker registers (see the module rules)."""
    return -1 - rng.randrange(4) if rng.random() < 0.5 else UNREGISTERED_BASE + rng.randrange(1 << 20)


def unknown_names(rng: random.Random) -> tuple[str, uuid.UUID]:
    """A topic name and id no topic has (the fleet names its topics "fleet-...")."""
    topic_id = uuid.UUID(int=rng.getrandbits(128))
    return f"fencer-probe-no-such-topic-{topic_id.hex[:12]}", topic_id
