"""What the fuzzer knows of the fuzzed node right now, read from the node itself.

`Context` holds the values templates and hostile values are made of: the node's id, the voters,
the Raft epoch, leader and log end offset (`/state`'s `quorum`), the cluster id, the topics with
their partitions (leader, epochs, ISR, replicas), the brokers the fuzzer may name (the bystander
never: a frame that re-registered, fenced or shut it down would be blamed on the daemon) and the
snapshots in the data dir (for FetchSnapshot). It is rebuilt from the `/state` document read
after every frame, so "current" in a template means current.

Rules: pure functions of a parsed `/state` document and a directory listing; no sockets here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METADATA_TOPIC = "__cluster_metadata"
#: Kafka's Uuid.METADATA_TOPIC_ID: how Fetch v13+ names `__cluster_metadata`
METADATA_TOPIC_ID = uuid.UUID(int=1)
#: a broker id no template registers and no voter has
UNKNOWN_ID = 4242


@dataclass(frozen=True, slots=True)
class PartitionView:
    index: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionView, ...]


@dataclass(frozen=True, slots=True)
class BrokerView:
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    fenced: bool


@dataclass(frozen=True, slots=True)
class Context:
    node_id: int
    voters: tuple[int, ...]
    cluster_id: str
    epoch: int
    leader_id: int | None
    log_end_offset: int
    high_watermark: int
    topics: tuple[TopicView, ...]
    brokers: tuple[BrokerView, ...]
    #: (end offset, epoch) of each snapshot in the fuzzed node's data dir, oldest first
    snapshots: tuple[tuple[int, int], ...]
    #: where a voter listens (BeginQuorumEpoch's leader endpoint)
    voter_ports: dict[int, int]
    #: a port nothing listens on: the listener of the brokers the fuzzer registers
    dead_port: int

    @property
    def other_voters(self) -> tuple[int, ...]:
        return tuple(voter for voter in self.voters if voter != self.node_id)

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(broker.broker_id for broker in self.brokers)

    def broker(self, broker_id: int) -> BrokerView | None:
        return next((broker for broker in self.brokers if broker.broker_id == broker_id), None)

    def id_pool(self) -> list[int]:
        """Ids a hostile id field takes: the node, another voter, known brokers, an unknown id,
        -1, 0 and int32 max."""
        return [self.node_id, *self.other_voters, *self.broker_ids, UNKNOWN_ID, -1, 0, 2**31 - 1]


def voter_ids(voters: list[str]) -> tuple[tuple[int, ...], dict[int, int]]:
    """The ids and ports of `/state`'s voter strings (`ID@HOST:PORT`)."""
    ids, ports = [], {}
    for entry in voters:
        node, address = entry.split("@", 1)
        ids.append(int(node))
        ports[int(node)] = int(address.rsplit(":", 1)[1])
    return tuple(ids), ports


def snapshots_in(data_dir: Path) -> tuple[tuple[int, int], ...]:
    """Kafka's snapshot names: `<20-digit end offset>-<10-digit epoch>.checkpoint`."""
    found = []
    for path in (data_dir / f"{METADATA_TOPIC}-0").glob("*.checkpoint"):
        offset, _, epoch = path.stem.partition("-")
        if offset.isdigit() and epoch.isdigit():
            found.append((int(offset), int(epoch)))
    return tuple(sorted(found))


def context_from(
    document: dict[str, Any], data_dir: Path, *, bystander_id: int, dead_port: int, snapshots: bool = True
) -> Context:
    """The context of a `/state` document (as `json.loads` gives it)."""
    quorum = document["quorum"]
    voters, ports = voter_ids(quorum["voters"])
    topics = tuple(
        TopicView(
            name=topic["name"],
            topic_id=uuid.UUID(topic["topic_id"]),
            partitions=tuple(
                PartitionView(
                    index=part["partition"],
                    leader=part["leader"],
                    leader_epoch=part["leader_epoch"],
                    partition_epoch=part["partition_epoch"],
                    isr=tuple(part["isr"]),
                    replicas=tuple(part["replicas"]),
                )
                for part in topic["partitions"]
            ),
        )
        for topic in document["topics"]
    )
    brokers = tuple(
        BrokerView(broker["id"], broker["epoch"], uuid.UUID(broker["incarnation_id"]), broker["fenced"])
        for broker in document["brokers"]
        if broker["id"] != bystander_id
    )
    return Context(
        node_id=quorum["node_id"],
        voters=voters,
        cluster_id=document["cluster_id"],
        epoch=quorum["epoch"],
        leader_id=quorum["leader_id"],
        log_end_offset=quorum["log_end_offset"],
        high_watermark=quorum["high_watermark"],
        topics=topics,
        brokers=brokers,
        snapshots=snapshots_in(data_dir) if snapshots else (),
        voter_ports=ports,
        dead_port=dead_port,
    )
