"""The request probes on AlterPartition: how each of its kinds is built from what the broker knows
(`probes.Knowledge`); the kinds, the plans and the judging of their answers are `probes`'.

Rules:
- At the AlterPartition version the broker negotiated (none: no probe; v2+ names topics by id: no
  probe for a topic whose id it does not know), from its own broker id and current epoch unless
  said otherwise (semantics.md's table and top level):
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
    than one member; "recovery-byte" (v1+): a LeaderRecoveryState byte other than 0 and 1
    (`RECOVERY_BYTES`);
  - "unknown-topic": a topic id (v2+) or name (v0-1) no topic has; "unknown-partition" (row a): a
    partition index (`probes.UNKNOWN_PARTITION` and up) of a topic it hosts;
  - "partition-twice" (docs/controller/decisions.md): from the leader, one partition named twice (or,
    one probe in three, `MANY_NAMINGS` times: more than a small `--max-records-per-operation`,
    so that the controller decides the request piece by piece, in a metadata transaction), as it
    is committed (a change of nothing): every naming after the first is INVALID_REQUEST, in one
    topic's answer;
  - "alter-partition-empty" (top level 2): no topic at all, from the broker's own id and epoch or
    from an unregistered id (the empty list is checked before the broker, step 3): NONE and no
    topic in the answer;
  - "alter-partition-newer-epoch" (row b): from the leader, as committed but with the leader
    epoch, the partition epoch or both `NEWER_EPOCH` and more above: that partition
    NOT_CONTROLLER, the top level NONE (a controller behind the one that gave those epochs);
  - "alter-partition-unregistered": a partition it hosts as its listener shows it, from a broker id
    no broker registers (`probes.unregistered_id`).
- The leader's probes take a partition it leads that has no ISR change in flight or waiting.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import Any

from protocol.api_keys import ApiKey
from protocol.spec import ZERO_UUID

from . import requests
from .leadership import RECOVERED, RECOVERING, Led
from .probes import (
    ALTER_PARTITION_EMPTY,
    ALTER_PARTITION_NEWER,
    ALTER_PARTITION_UNREGISTERED,
    DUPLICATE,
    FOLLOWER,
    NEGATIVE_ID,
    NON_REPLICA,
    PARTITION_TWICE,
    RECOVERING_ISR,
    RECOVERY_BYTE,
    RECOVERY_ROLLBACK,
    UNKNOWN_PARTITION,
    UNKNOWN_PARTITION_KIND,
    UNKNOWN_TOPIC,
    WITHOUT_LEADER,
    Builder,
    Knowledge,
    ProbePlan,
    unknown_names,
    unregistered_id,
)
from .requests import Proposal

#: how many times one probe in three of "partition-twice" names its partition: above the small
#: record caps the simulator draws (a topic's creation, or one more: 4-5 at its defaults)
MANY_NAMINGS = 7
RECOVERY_BYTES = (2, 3, 127, -1, -128)  # LeaderRecoveryState is an INT8: 0 and 1 are the states
NEWER_EPOCH = 1000  # row b: this far above the committed epochs, no controller of the run has them


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
    name, topic_id = unknown_names(rng)
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


BUILDERS: dict[str, Builder] = {
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
    ALTER_PARTITION_EMPTY: _empty,
    ALTER_PARTITION_NEWER: _newer_epoch,
}
