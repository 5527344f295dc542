"""A fixed cluster for drivers of AlterPartition on known partitions (tests/e2e/test_shutdown.py,
benchmarks/daemon.py): the three data brokers of load.py and one topic, `stress`, every
partition led by its first replica, and `check_recovered` for a restart with nothing in flight
but what `Acked.in_flight` records."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
)
from tests.e2e.fencer_client import FencerClient

from .load import register_data_brokers
from .model import DATA_BROKERS


@dataclass
class Acked:
    """The last acknowledged state of a partition, and whether a request was in flight after it."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    in_flight: tuple[int, ...] | None = None


@dataclass
class Cluster:
    topic_id: uuid.UUID
    epochs: dict[int, int]
    replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    partitions: dict[int, Acked] = field(default_factory=dict)


def setup(
    port: int,
    partitions: int,
    rotation: Callable[[int], int] = lambda p: p,
    brokers: tuple[int, int, int] = DATA_BROKERS,
    name: str = "stress",
) -> Cluster:
    """Three brokers (`brokers`) and a topic `name` whose partition p has replicas rotated by
    `rotation(p)` (the first leads)."""
    replicas = {p: tuple(brokers[(rotation(p) + i) % 3] for i in range(3)) for p in range(partitions)}
    _, epochs = register_data_brokers(port, brokers=brokers)
    assignments = tuple(
        CreateTopicsRequestCreatableReplicaAssignment(partition_index=p, broker_ids=replicas[p])
        for p in range(partitions)
    )
    topic = CreateTopicsRequestCreatableTopic(
        name=name, num_partitions=-1, replication_factor=-1, assignments=assignments
    )
    with FencerClient(port) as client:
        result = client.request(CreateTopicsRequest(topics=(topic,)), 7).topics[0]
    assert result.error_code == 0, result
    cluster = Cluster(result.topic_id, epochs, replicas)
    for p in range(partitions):
        cluster.partitions[p] = Acked(replicas[p][0], 0, 0, replicas[p])
    return cluster


def fetch_state(metrics_port: int) -> dict[str, object]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/state", timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def check_recovered(cluster: Cluster, state: dict[str, object]) -> None:
    """Every partition of `stress` shows its last acknowledged change, or the one in flight after it."""
    topics = {t["name"]: t for t in state["topics"]}  # type: ignore[attr-defined, index]
    for part in topics["stress"]["partitions"]:
        acked = cluster.partitions[part["partition"]]
        recovered = (part["partition_epoch"], tuple(part["isr"]))
        allowed = [(acked.partition_epoch, acked.isr)]
        if acked.in_flight is not None:
            allowed.append((acked.partition_epoch + 1, acked.in_flight))
        assert recovered in allowed, f"partition {part['partition']}: recovered {recovered}, acknowledged {allowed}"
        cluster.partitions[part["partition"]] = Acked(part["leader"], part["leader_epoch"], *recovered)
