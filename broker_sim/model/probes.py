"""Request probes: requests a real peer could send that a correct controller must refuse
with the exact error semantics.md names, sent on purpose in chaos and journalled with their answer.

Rules:
- The kinds (`KINDS`), each built from what the broker knows when it builds it, at the version it
  negotiated for the API (the fleet spreads versions over its brokers, so every version is
  probed), on its own broker id and current epoch unless said otherwise:
  AlterPartition (semantics.md's table):
  - "follower" (row d): from a follower of a partition its listener shows led by another broker,
    on that view's leader and partition epochs and ISR (the leader kept: as it is, or without the
    follower itself);
  - "non-replica", "duplicate", "negative-id", "without-leader" (row f): from the leader, on the
    epochs it holds committed, its ISR plus a broker that holds no replica of the partition (a
    replica of another partition it knows, else an id past them), plus a member named twice,
    plus a negative id, or without the leader;
  - "recovery-rollback", "recovering-isr" (row g, v1+): RECOVERING from RECOVERED with the leader
    alone (only where the controller said RECOVERED: a LeaderAndIsr before v6 or an AlterPartition
    answer v0 does not say it, and an unclean election leaves RECOVERING), RECOVERING with more
    than one member; "recovery-byte" (v1+): a LeaderRecoveryState byte other than 0 and 1;
  - "unknown-topic": a topic id (v2+) or name (v0-1) no topic has; "unknown-partition" (row a): a
    partition index (`UNKNOWN_PARTITION` and up) of a topic it hosts;
  - "partition-twice" (README, What it decides): from the leader, one partition named twice (or,
    one probe in three, `MANY_NAMINGS` times: more than a small `--max-records-per-operation`,
    so that the controller decides the request piece by piece, in a metadata transaction), as it
    is committed (a change of nothing): every naming after the first is INVALID_REQUEST, in one
    topic's answer;
  - "alter-partition-empty" (top level 2): no topic at all, from the broker's own id and epoch or
    from an unregistered id (the empty list is checked before the broker, step 3): NONE and no
    topic in the answer;
  - "alter-partition-newer-epoch" (row b): from the leader, as committed but with the leader
    epoch, the partition epoch or both `NEWER_EPOCH` and more above: that partition
    NOT_CONTROLLER, the top level NONE (a controller behind the one that gave those epochs).
  BrokerHeartbeat "heartbeat-unregistered", ControlledShutdown "shutdown-unregistered",
  AlterPartition "alter-partition-unregistered" and AlterReplicaState "replica-state-unregistered"
  (naming a partition it hosts): a broker id no broker registers: negative (refused at
  registration), or `UNREGISTERED_BASE` and up.
  BrokerRegistration "registration-cluster-id": a cluster id other than the one DescribeCluster
  gave, for an id of `UNREGISTERED_BASE` and up; "registration-negative-id": a negative id.
  AlterReplicaState "replica-state-unknown-state": a NewState other than 1 and 2, for a replica it
  hosts; "replica-state-unknown-topic": OFFLINE for a topic id (v1) or name (v0) no topic has;
  "replica-state-unknown-partition": OFFLINE for a partition index past those of a topic it hosts;
  "replica-state-no-op": the state the controller surely holds for a replica it hosts
  (`Knowledge.replica_states`: ONLINE on a dir that has not failed in this incarnation, OFFLINE on
  a failed dir whose OFFLINE was answered NONE and not repaired since): NONE, nothing written.
  Both say the truth, so a controller that takes one for a change changes nothing real.
  BrokerRegistration "registration-duplicate": its own id, the cluster id, a new incarnation id
  (a second process configured with its node id), only while its own session is surely valid:
  ACTIVE, not shutting down, the last heartbeat answered NONE and unfenced sent less than a third
  of the session timeout ago (`Knowledge.heard_at`): DUPLICATE_BROKER_REGISTRATION. The plan
  keeps when that heartbeat was sent (`ProbePlan.heard_at`), and the answer's facts
  (`answer_facts`) say how long after it the answer came: the checker blames an acceptance only
  when that is within the session timeout and the log has not fenced the incarnation first. An
  accepted one replaced the broker's registration: the broker registers its own incarnation
  again at once (`BrokerModel`), so that nothing it sends with the replaced epoch is judged.
- A probe built on epochs may meet newer ones at the controller (a follower's view lags; the
  leader's committed epochs may have moved): which answers are right is the checker's
  (`broker_sim.check.journal_rules.wrong_probe_answer`), not the fleet's; the fleet records facts.
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
  the others) judged nothing: the probe goes again, first, after a backoff
  (`RequestProbes.again`), unless the incarnation ended meanwhile (its epoch is gone) or
  `MAX_NOT_JUDGED` answers in a row said so.
- Pacing (`RequestProbes`, chaos only): each broker one probe per `gap_for` its fleet process's
  broker count (`PROBE_GAP_S`, longer in a large fleet: at most `PROBES_PER_S` a second in all,
  so that the probes never weigh on a benchmark's load), the kinds in a cycle of the `KINDS`
  order rotated by a seeded offset per broker (so that brokers probing at the same time probe
  different rows), a kind it cannot build now skipped for the next. Its randomness is its own
  seeded `random.Random`, so the broker's other draws are untouched.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import OFFLINE, AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownResponse
from protocol.spec import ZERO_UUID, Data

from . import requests
from .answers import not_controller
from .leadership import RECOVERED, RECOVERING, Led
from .requests import Proposal
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
#: how many times one probe in three of "partition-twice" names its partition: above the small
#: record caps the simulator draws (a topic's creation, or one more: 4-5 at its defaults)
MANY_NAMINGS = 7
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
PROBE_GAP_S = 1.0
PROBES_PER_S = 10.0
MAX_NOT_JUDGED = 5
#: broker ids from here up are never registered by a fleet (its ids stay below, README: ids past
#: Kafka's int32 are refused, and no fleet of this project starts that high)
UNREGISTERED_BASE = 2_000_000_000
UNKNOWN_PARTITION = 1 << 20  # no topic of a fleet has this many partitions
RECOVERY_BYTES = (2, 3, 127, -1, -128)  # LeaderRecoveryState is an INT8: 0 and 1 are the states
UNKNOWN_REPLICA_STATES = (0, 3, 127, -1)  # AlterReplicaState NewState is an INT8: 1 OFFLINE, 2 ONLINE
NEWER_EPOCH = 1000  # row b: this far above the committed epochs, no controller of the run has them
FRESH_SESSION_FRACTION = 1 / 3  # a duplicate registration only within this part of the session


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


def build(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    """A probe of `kind` from what the broker knows, or None when it cannot build one now."""
    return _BUILDERS[kind](kind, rng, known)


# ---------------------------------------------------------------------- AlterPartition
def _alter_partition(
    kind: str,
    known: Knowledge,
    proposal: Proposal,
    times: int = 1,
    sender: tuple[int, int] | None = None,
    **detail: Any,
) -> ProbePlan | None:
    """`sender`: the (broker id, broker epoch) the request claims, when not the broker's own."""
    version = known.versions.get(ApiKey.ALTER_PARTITION)
    if version is None or (version >= 2 and proposal.topic_id == ZERO_UUID):
        return None
    broker_id, broker_epoch = sender or (known.broker_id, known.broker_epoch)
    body = requests.alter_partition(version, broker_id, broker_epoch, [proposal] * times)
    named = {
        "topic": proposal.topic,
        "topic_id": str(proposal.topic_id),
        "partition": proposal.partition,
        "leader_epoch": proposal.leader_epoch,
        "partition_epoch": proposal.partition_epoch,
        "isr": list(proposal.isr),
        "leader_recovery_state": proposal.recovery_state,
        **detail,
    }
    return ProbePlan(kind, ApiKey.ALTER_PARTITION, version, body, known.broker_epoch, named)


def _change(
    topic: str, topic_id: uuid.UUID, partition: int, epochs: tuple[int, int], isr: Iterable[int], recovery: int
) -> Proposal:
    members = tuple(isr)
    return Proposal(topic, topic_id, partition, epochs[0], epochs[1], members, (-1,) * len(members), recovery)


def _follower(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    followed = [
        v
        for v in known.hosted
        if v.leader >= 0 and v.leader != known.broker_id and known.broker_id in v.replicas and v.leader in v.isr
    ]
    if not followed:
        return None
    view = rng.choice(followed)
    isr = view.isr
    if known.broker_id in isr and rng.random() < 0.5:
        isr = tuple(member for member in isr if member != known.broker_id)
    topic_id = known.topic_id(view.topic_name, view.topic_id)
    epochs = (view.leader_epoch, view.partition_epoch)
    proposal = _change(view.topic_name, topic_id, view.partition, epochs, isr, view.leader_recovery_state)
    return _alter_partition(kind, known, proposal, leader=view.leader)


def _idle_led(known: Knowledge, rng: random.Random, recovered: bool = False) -> Led | None:
    idle = [
        led
        for _, led in sorted(known.led.items())
        if not led.in_flight
        and led.waiting_since is None
        and (not recovered or (led.recovery_state == RECOVERED and led.recovery_known))
    ]
    return rng.choice(idle) if idle else None


def _led_change(
    kind: str, known: Knowledge, led: Led, isr: Iterable[int], recovery: int, **detail: Any
) -> ProbePlan | None:
    topic_id = known.topic_id(led.topic, led.topic_id)
    proposal = _change(led.topic, topic_id, led.partition, led.epochs, isr, recovery)
    return _alter_partition(kind, known, proposal, **detail)


def _isr_shape(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    led = _idle_led(known, rng)
    if led is None:
        return None
    isr = led.isr
    if kind == NON_REPLICA:
        others = sorted({r for v in known.hosted for r in v.replicas} - set(led.replicas))
        stranger = rng.choice(others) if others else max((*led.replicas, *led.isr)) + 1
        return _led_change(kind, known, led, (*isr, stranger), led.recovery_state, non_replica=stranger)
    if kind == DUPLICATE:
        twice = rng.choice(isr) if isr else known.broker_id
        return _led_change(kind, known, led, (*isr, twice), led.recovery_state, duplicate=twice)
    if kind == NEGATIVE_ID:
        negative = -1 - rng.randrange(3)
        return _led_change(kind, known, led, (*isr, negative), led.recovery_state, negative=negative)
    without = tuple(member for member in isr if member != known.broker_id)
    return _led_change(kind, known, led, without, led.recovery_state)


def _twice(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    led = _idle_led(known, rng)
    if led is None:
        return None
    topic_id = known.topic_id(led.topic, led.topic_id)
    proposal = _change(led.topic, topic_id, led.partition, led.epochs, led.isr, led.recovery_state)
    times = MANY_NAMINGS if rng.random() < 1 / 3 else 2
    return _alter_partition(kind, known, proposal, times=times, times_named=times)


def _recovery(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    if known.versions.get(ApiKey.ALTER_PARTITION, 0) < 1:
        return None  # v0 carries no LeaderRecoveryState
    led = _idle_led(known, rng, recovered=kind == RECOVERY_ROLLBACK)
    if led is None:
        return None
    if kind == RECOVERY_ROLLBACK:
        return _led_change(kind, known, led, (known.broker_id,), RECOVERING)
    if kind == RECOVERING_ISR:
        isr = led.isr if len(led.isr) > 1 else (*led.isr, *[r for r in led.replicas if r not in led.isr][:1])
        return None if len(isr) < 2 else _led_change(kind, known, led, isr, RECOVERING)
    return _led_change(kind, known, led, led.isr, rng.choice(RECOVERY_BYTES))


def _unknown_topic(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.ALTER_PARTITION)
    if version is None:
        return None
    name, topic_id = _unknown_names(rng)
    proposal = _change(name, topic_id, 0, (0, 0), (known.broker_id,), RECOVERED)
    return _alter_partition(kind, known, proposal)


def _unknown_partition(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    if not known.hosted:
        return None
    view = rng.choice(list(known.hosted))
    index = UNKNOWN_PARTITION + rng.randrange(1 << 10)
    topic_id = known.topic_id(view.topic_name, view.topic_id)
    proposal = _change(view.topic_name, topic_id, index, (0, 0), (known.broker_id,), RECOVERED)
    return _alter_partition(kind, known, proposal)


def _unregistered_alter(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    if not known.hosted:
        return None
    view = rng.choice(list(known.hosted))
    topic_id = known.topic_id(view.topic_name, view.topic_id)
    epochs = (view.leader_epoch, view.partition_epoch)
    proposal = _change(view.topic_name, topic_id, view.partition, epochs, view.isr, view.leader_recovery_state)
    sender = (unregistered_id(rng), rng.randrange(1 << 20))
    return _alter_partition(kind, known, proposal, sender=sender, broker_id=sender[0], request_broker_epoch=sender[1])


def _empty(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.ALTER_PARTITION)
    if version is None:
        return None
    own = rng.random() < 0.5
    broker_id, broker_epoch = (known.broker_id, known.broker_epoch) if own else (unregistered_id(rng), 0)
    body = requests.alter_partition(version, broker_id, broker_epoch, [])
    detail = {"broker_id": broker_id, "request_broker_epoch": broker_epoch}
    return ProbePlan(kind, ApiKey.ALTER_PARTITION, version, body, known.broker_epoch, detail)


def _newer_epoch(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    led = _idle_led(known, rng)
    if led is None:
        return None
    raised = rng.choice(("leader_epoch", "partition_epoch", "both"))
    bump = NEWER_EPOCH + rng.randrange(NEWER_EPOCH)
    leader_epoch = led.leader_epoch + (bump if raised != "partition_epoch" else 0)
    partition_epoch = led.partition_epoch + (bump if raised != "leader_epoch" else 0)
    topic_id = known.topic_id(led.topic, led.topic_id)
    proposal = _change(led.topic, topic_id, led.partition, (leader_epoch, partition_epoch), led.isr, led.recovery_state)
    return _alter_partition(
        kind, known, proposal, raised=raised, committed_epochs=[led.leader_epoch, led.partition_epoch]
    )


def _unknown_names(rng: random.Random) -> tuple[str, uuid.UUID]:
    """A topic name and id no topic has (the fleet names its topics "fleet-...")."""
    topic_id = uuid.UUID(int=rng.getrandbits(128))
    return f"fencer-probe-no-such-topic-{topic_id.hex[:12]}", topic_id


# ---------------------------------------------------------------------- brokers
def unregistered_id(rng: random.Random) -> int:
    """A broker id that no broker registers (see the module rules)."""
    return -1 - rng.randrange(4) if rng.random() < 0.5 else UNREGISTERED_BASE + rng.randrange(1 << 20)


def _heartbeat(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.BROKER_HEARTBEAT)
    if version is None:
        return None
    broker_id, epoch = unregistered_id(rng), rng.randrange(1 << 20)
    body = requests.broker_heartbeat(version, broker_id, epoch, epoch, False, ())
    detail = {"broker_id": broker_id, "request_broker_epoch": epoch}
    return ProbePlan(kind, ApiKey.BROKER_HEARTBEAT, version, body, known.broker_epoch, detail)


def _shutdown(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.CONTROLLED_SHUTDOWN)
    if version is None:
        return None
    broker_id, epoch = unregistered_id(rng), rng.choice((-1, rng.randrange(1 << 20)))
    body = requests.controlled_shutdown(version, broker_id, epoch)
    detail = {"broker_id": broker_id, "request_broker_epoch": body.broker_epoch}
    return ProbePlan(kind, ApiKey.CONTROLLED_SHUTDOWN, version, body, known.broker_epoch, detail)


def _registration(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.BROKER_REGISTRATION)
    if version is None or not known.cluster_id:
        return None
    if kind == REGISTRATION_CLUSTER_ID:
        broker_id = UNREGISTERED_BASE + rng.randrange(1 << 20)
        cluster_id = f"probe-{rng.getrandbits(64):016x}"
    else:
        broker_id, cluster_id = -1 - rng.randrange(4), known.cluster_id
    incarnation = uuid.UUID(int=rng.getrandbits(128))
    log_dirs = (uuid.UUID(int=rng.getrandbits(128)),)
    body = requests.broker_registration(version, broker_id, cluster_id, incarnation, "127.0.0.1", 1, log_dirs, -1)
    detail = {"broker_id": broker_id, "cluster_id": cluster_id}
    return ProbePlan(kind, ApiKey.BROKER_REGISTRATION, version, body, known.broker_epoch, detail)


def _duplicate_registration(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.BROKER_REGISTRATION)
    heard_at = known.heard_at
    if version is None or not known.cluster_id or heard_at is None or known.broker_epoch < 0:
        return None
    if known.now - heard_at >= known.session_timeout_s * FRESH_SESSION_FRACTION:
        return None
    incarnation = uuid.UUID(int=rng.getrandbits(128))
    log_dirs = (uuid.UUID(int=rng.getrandbits(128)),)
    body = requests.broker_registration(
        version, known.broker_id, known.cluster_id, incarnation, "127.0.0.1", 1, log_dirs, -1
    )
    detail = {
        "broker_id": known.broker_id,
        "incarnation_id": str(incarnation),
        "heard_ms_before_sent": round((known.now - heard_at) * 1000),
        "session_timeout_ms": round(known.session_timeout_s * 1000),
    }
    return ProbePlan(kind, ApiKey.BROKER_REGISTRATION, version, body, known.broker_epoch, detail, heard_at)


def _no_op_state(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.ALTER_REPLICA_STATE)
    if version is None:
        return None
    candidates = []
    for view in known.hosted:
        state = known.replica_states.get((view.topic_name, view.partition))
        topic_id = known.topic_id(view.topic_name, view.topic_id)
        if state is not None and not (version >= 1 and topic_id == ZERO_UUID):
            candidates.append((view.topic_name, topic_id, view.partition, state))
    if not candidates:
        return None
    name, topic_id, partition, state = rng.choice(candidates)
    body = requests.alter_replica_state(
        version, known.broker_id, known.broker_epoch, state, "probe", [(name, topic_id, partition)]
    )
    detail = {"topic": name, "topic_id": str(topic_id), "partition": partition, "new_state": state}
    return ProbePlan(kind, ApiKey.ALTER_REPLICA_STATE, version, body, known.broker_epoch, detail)


def _replica_state(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.ALTER_REPLICA_STATE)
    if version is None:
        return None
    sender = (known.broker_id, known.broker_epoch)
    if kind == REPLICA_STATE_UNREGISTERED:
        sender = (unregistered_id(rng), rng.randrange(1 << 20))
    if kind in (REPLICA_STATE_UNKNOWN_STATE, REPLICA_STATE_UNKNOWN_PARTITION, REPLICA_STATE_UNREGISTERED):
        if not known.hosted:
            return None
        view = rng.choice(list(known.hosted))
        unknown = kind == REPLICA_STATE_UNKNOWN_PARTITION
        index = UNKNOWN_PARTITION + rng.randrange(1 << 10) if unknown else view.partition
        replica = (view.topic_name, known.topic_id(view.topic_name, view.topic_id), index)
        if version >= 1 and replica[1] == ZERO_UUID:
            return None
        new_state = rng.choice(UNKNOWN_REPLICA_STATES) if kind == REPLICA_STATE_UNKNOWN_STATE else OFFLINE
    else:
        name, topic_id = _unknown_names(rng)
        replica, new_state = (name, topic_id, 0), OFFLINE
    body = requests.alter_replica_state(version, *sender, new_state, "probe", [replica])
    detail = {"topic": replica[0], "topic_id": str(replica[1]), "partition": replica[2], "new_state": new_state}
    if sender[0] != known.broker_id:
        detail.update(broker_id=sender[0], request_broker_epoch=sender[1])
    return ProbePlan(kind, ApiKey.ALTER_REPLICA_STATE, version, body, known.broker_epoch, detail)


_BUILDERS: dict[str, Callable[[str, random.Random, Knowledge], ProbePlan | None]] = {
    FOLLOWER: _follower,
    NON_REPLICA: _isr_shape,
    DUPLICATE: _isr_shape,
    NEGATIVE_ID: _isr_shape,
    WITHOUT_LEADER: _isr_shape,
    RECOVERY_ROLLBACK: _recovery,
    RECOVERING_ISR: _recovery,
    RECOVERY_BYTE: _recovery,
    UNKNOWN_TOPIC: _unknown_topic,
    UNKNOWN_PARTITION_KIND: _unknown_partition,
    PARTITION_TWICE: _twice,
    ALTER_PARTITION_UNREGISTERED: _unregistered_alter,
    HEARTBEAT_UNREGISTERED: _heartbeat,
    SHUTDOWN_UNREGISTERED: _shutdown,
    REGISTRATION_CLUSTER_ID: _registration,
    REGISTRATION_NEGATIVE_ID: _registration,
    REPLICA_STATE_UNKNOWN_STATE: _replica_state,
    REPLICA_STATE_UNKNOWN_TOPIC: _replica_state,
    REPLICA_STATE_UNKNOWN_PARTITION: _replica_state,
    REPLICA_STATE_UNREGISTERED: _replica_state,
    ALTER_PARTITION_EMPTY: _empty,
    ALTER_PARTITION_NEWER: _newer_epoch,
    REGISTRATION_DUPLICATE: _duplicate_registration,
    REPLICA_STATE_NO_OP: _no_op_state,
}


# ---------------------------------------------------------------------- pacing
def gap_for(brokers: int) -> float:
    """Each broker's time between probes in a fleet process of `brokers` brokers."""
    return max(PROBE_GAP_S, brokers / PROBES_PER_S)


class RequestProbes:
    """A broker's request probes: which kind comes next, when, and one answered NOT_CONTROLLER
    waiting to go again (see the module rules)."""

    def __init__(self, enabled: bool, seed: int, broker_id: int, gap_s: float = PROBE_GAP_S) -> None:
        self.enabled = enabled
        self.gap_s = gap_s
        self.rng = random.Random(f"{seed}:{broker_id}:request-probes")
        self.position = self.rng.randrange(len(KINDS))
        self.next_at = 0.0
        self.pending: ProbePlan | None = None  # answered NOT_CONTROLLER: sent again first
        self.not_judged = 0

    def due(self, t: float) -> bool:
        return self.enabled and t >= self.next_at

    def take(self, t: float, known: Knowledge) -> ProbePlan | None:
        """The probe to send at `t` (the next one is due `gap_s` later), or None."""
        self.next_at = t + self.gap_s
        pending, self.pending = self.pending, None
        if pending is not None:
            return pending
        for _ in range(len(KINDS)):
            kind = KINDS[self.position % len(KINDS)]
            self.position += 1
            plan = build(kind, self.rng, known)
            if plan is not None:
                return plan
        return None

    def again(self, plan: ProbePlan, retry_at: float) -> None:
        """`plan` was answered NOT_CONTROLLER: it goes again first, not before `retry_at`."""
        self.not_judged += 1
        self.pending = plan if self.not_judged < MAX_NOT_JUDGED else None
        self.next_at = retry_at

    def judged(self) -> None:
        self.not_judged = 0

    def new_incarnation(self) -> None:
        """A probe built with the ended incarnation's epoch is no longer right: dropped."""
        self.pending = None
        self.not_judged = 0
