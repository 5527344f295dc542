"""What the request probes' tests share: what a broker knows as a test sets it (`knowledge`, `led`,
the views it hosts), the plans built from it, and the answers they get.
"""

from __future__ import annotations

import random
import uuid

from broker_sim.model import request_probes
from broker_sim.model.leadership import Led
from broker_sim.model.probes import Knowledge, ProbePlan
from broker_sim.model.views import PartitionView
from protocol.api_keys import ApiKey
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.messages.alter_replica_state import (
    ONLINE,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.spec import ZERO_UUID

from .helpers import TOPIC, TOPIC_ID, view

ME = 2
VERSIONS: dict[int, int] = {
    ApiKey.ALTER_PARTITION: 3,
    ApiKey.BROKER_HEARTBEAT: 1,
    ApiKey.CONTROLLED_SHUTDOWN: 3,
    ApiKey.BROKER_REGISTRATION: 3,
    ApiKey.ALTER_REPLICA_STATE: 1,
}


def led(partition: int = 1, isr: tuple[int, ...] = (2, 3), recovery: int = 0, **fields: object) -> Led:
    values: dict[str, object] = {
        "topic": TOPIC,
        "topic_id": TOPIC_ID,
        "partition": partition,
        "replicas": (2, 3, 1),
        "leader_epoch": 4,
        "partition_epoch": 9,
        "isr": isr,
        "recovery_state": recovery,
    }
    values.update(fields)
    return Led(**values)  # type: ignore[arg-type]


def knowledge(
    *,
    versions: dict[int, int] | None = None,
    leads: tuple[Led, ...] = (),
    hosted: tuple[PartitionView, ...] = (),
    ids: dict[str, uuid.UUID] | None = None,
    heard_at: float | None = 9.5,
    states: dict[tuple[str, int], int] | None = None,
) -> Knowledge:
    """A broker at t = 10 s, heard 0.5 s ago (session 3 s), every hosted replica ONLINE unless `states`."""
    known_ids = ids if ids is not None else {TOPIC: TOPIC_ID}
    return Knowledge(
        broker_id=ME,
        broker_epoch=40,
        versions=VERSIONS if versions is None else versions,
        cluster_id="cluster-1",
        led={(item.topic, item.partition): item for item in leads},
        hosted=hosted,
        topic_id=lambda name, topic_id: topic_id if topic_id != ZERO_UUID else known_ids.get(name, ZERO_UUID),
        now=10.0,
        heard_at=heard_at,
        session_timeout_s=3.0,
        replica_states={(v.topic_name, v.partition): ONLINE for v in hosted} if states is None else states,
    )


FOLLOWED = view(leader=1, leader_epoch=6, partition_epoch=11, isr=(1, 2, 3), replicas=(1, 2, 3), partition=0)
LED_VIEW = view(leader=2, leader_epoch=4, partition_epoch=9, isr=(2, 3), replicas=(2, 3, 1), partition=1)
STRANGER_VIEW = view(leader=5, isr=(5, 2), replicas=(5, 2, 7), partition=2)


def built(kind: str, known: Knowledge, seed: int = 1) -> ProbePlan:
    plan = request_probes.build(kind, random.Random(seed), known)
    assert plan is not None, kind
    assert plan.probe == kind and plan.broker_epoch == 40
    return plan


def alter(plan: ProbePlan) -> tuple[AlterPartitionRequest, list[int], int, int, int]:
    """(the request, its one partition's ISR, leader epoch, partition epoch, recovery state)."""
    body = plan.body
    assert isinstance(body, AlterPartitionRequest) and plan.api_key == ApiKey.ALTER_PARTITION
    assert (body.broker_id, body.broker_epoch) == (ME, 40)
    [topic] = body.topics
    [part] = topic.partitions
    isr = [int(m.broker_id) for m in part.new_isr_with_epochs] if plan.version >= 3 else list(map(int, part.new_isr))
    return body, isr, int(part.leader_epoch), int(part.partition_epoch), part.leader_recovery_state


def partition_answer(*codes: int, top: int = 0) -> AlterPartitionResponse:
    parts = tuple(AlterPartitionResponsePartitionData(partition_index=0, error_code=code) for code in codes)
    return AlterPartitionResponse(error_code=top, topics=(AlterPartitionResponseTopicData(partitions=parts),))


REPLICA_STATE_NONE = AlterReplicaStateResponse(
    topics=(
        AlterReplicaStateResponseTopicResult(partitions=(AlterReplicaStateResponsePartitionResult(partition_index=0),)),
    )
)
