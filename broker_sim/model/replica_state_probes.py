"""The request probes on AlterReplicaState: how each of its kinds is built from what the broker
knows (`probes.Knowledge`); the kinds, the plans and the judging of their answers are `probes`'.

Rules:
- At the AlterReplicaState version the broker negotiated (none: no probe; v1 names topics by id:
  no probe for a topic whose id it does not know), from its own broker id and current epoch unless
  said otherwise:
  - "replica-state-unknown-state": a NewState other than 1 and 2 (`UNKNOWN_REPLICA_STATES`), for a
    replica it hosts;
  - "replica-state-unknown-topic": OFFLINE for a topic id (v1) or name (v0) no topic has;
  - "replica-state-unknown-partition": OFFLINE for a partition index past those of a topic it hosts
    (`probes.UNKNOWN_PARTITION` and up);
  - "replica-state-unregistered": OFFLINE for a replica it hosts, from a broker id no broker
    registers (`probes.unregistered_id`);
  - "replica-state-no-op": the state the controller surely holds for a replica it hosts
    (`Knowledge.replica_states`: ONLINE on a dir that has not failed in this incarnation, OFFLINE on
    a failed dir whose OFFLINE was answered NONE and not repaired since): NONE, nothing written.
    Both say the truth, so a controller that takes one for a change changes nothing real.
"""

from __future__ import annotations

import random

from protocol.api_keys import ApiKey
from protocol.messages.alter_replica_state import OFFLINE
from protocol.spec import ZERO_UUID

from . import requests
from .probes import (
    REPLICA_STATE_NO_OP,
    REPLICA_STATE_UNKNOWN_PARTITION,
    REPLICA_STATE_UNKNOWN_STATE,
    REPLICA_STATE_UNKNOWN_TOPIC,
    REPLICA_STATE_UNREGISTERED,
    UNKNOWN_PARTITION,
    Builder,
    Knowledge,
    ProbePlan,
    unknown_names,
    unregistered_id,
)

UNKNOWN_REPLICA_STATES = (0, 3, 127, -1)  # AlterReplicaState NewState is an INT8: 1 OFFLINE, 2 ONLINE


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
        name, topic_id = unknown_names(rng)
        replica, new_state = (name, topic_id, 0), OFFLINE
    body = requests.alter_replica_state(version, *sender, new_state, "probe", [replica])
    detail = {"topic": replica[0], "topic_id": str(replica[1]), "partition": replica[2], "new_state": new_state}
    if sender[0] != known.broker_id:
        detail.update(broker_id=sender[0], request_broker_epoch=sender[1])
    return ProbePlan(kind, ApiKey.ALTER_REPLICA_STATE, version, body, known.broker_epoch, detail)


BUILDERS: dict[str, Builder] = {
    REPLICA_STATE_UNKNOWN_STATE: _replica_state,
    REPLICA_STATE_UNKNOWN_TOPIC: _replica_state,
    REPLICA_STATE_UNKNOWN_PARTITION: _replica_state,
    REPLICA_STATE_UNREGISTERED: _replica_state,
    REPLICA_STATE_NO_OP: _no_op_state,
}
