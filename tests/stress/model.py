"""What the daemon acknowledged, and whether a recovered `/state` holds exactly that.

A `ClientModel` is one load client's share of the cluster: its topics (every partition as last
acknowledged), the topics it deleted, its own registering broker (incarnation and epoch as
last acknowledged) and the one request it may have in flight. Nothing is shared between
clients, so each model changes only in its client's thread.

Rules of `reconcile` (after a restart, in the main thread):
- Every acknowledged change is present: each data broker and each client's broker with its
  acknowledged epoch (and incarnation); each live topic with its id and every partition
  (leader, leader epoch, partition epoch, ISR, replicas); no deleted topic.
- The one request a client had in flight when the daemon died may have been applied or not,
  but nothing else: an ISR change one partition epoch later, a new incarnation with a higher
  epoch, a created topic with every partition in its initial state, a topic deleted. What was
  found is adopted, so the next round continues from the recovered state.
- A topic that no client created (or had in flight) is a problem too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

DATA_BROKERS = (1, 2, 3)


@dataclass(frozen=True)
class PartitionModel:
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]

    @staticmethod
    def created(replicas: tuple[int, ...]) -> PartitionModel:
        """A new partition whose replicas are all active: the first leads, all are in the ISR."""
        return PartitionModel(replicas, replicas[0], 0, 0, replicas)

    @staticmethod
    def from_state(part: dict[str, Any]) -> PartitionModel:
        return PartitionModel(
            tuple(part["replicas"]), part["leader"], part["leader_epoch"], part["partition_epoch"], tuple(part["isr"])
        )


@dataclass
class TopicModel:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionModel]


@dataclass(frozen=True)
class InFlight:
    """The request a client sent and has no answer for yet."""

    kind: str  # "alter", "heartbeat", "create", "delete" or "register"
    topic: str = ""
    partition: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[tuple[int, ...], ...] = ()  # create: each partition's replicas
    incarnation: uuid.UUID | None = None


@dataclass
class ClientModel:
    index: int
    broker_id: int
    topics: dict[str, TopicModel] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    topics_started: int = 0  # names are never reused: the next topic is c<index>-t<topics_started>
    incarnation: uuid.UUID | None = None
    broker_epoch: int = -1
    in_flight: InFlight | None = None


@dataclass
class Reconciled:
    problems: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)  # what became of each request in flight

    def outcome(self, request: str, applied: bool) -> None:
        self.outcomes.append(f"{request}: {'applied' if applied else 'not applied'}")


def reconcile(clients: list[ClientModel], data_epochs: dict[int, int], state: dict[str, Any]) -> Reconciled:
    """Check `state` (the recovered `/state`) against the models; adopt the in-flight outcomes."""
    result = Reconciled()
    brokers = {broker["id"]: broker for broker in state["brokers"]}
    topics = {topic["name"]: topic for topic in state["topics"]}
    for broker_id, epoch in data_epochs.items():
        found = brokers.get(broker_id, {}).get("epoch")
        if found != epoch:
            result.problems.append(f"data broker {broker_id}: epoch {found} recovered, {epoch} acknowledged")
    unclaimed = set(topics)
    for client in clients:
        in_flight, client.in_flight = client.in_flight, None
        _check_broker(client, brokers.get(client.broker_id), in_flight, result)
        unclaimed -= _check_topics(client, topics, in_flight, result)
    for name in sorted(unclaimed):
        result.problems.append(f"topic {name} recovered, but no client created it")
    return result


def _check_broker(
    client: ClientModel, found: dict[str, Any] | None, in_flight: InFlight | None, result: Reconciled
) -> None:
    acked = (str(client.incarnation), client.broker_epoch) if client.incarnation is not None else None
    recovered = (found["incarnation_id"], found["epoch"]) if found is not None else None
    if in_flight is not None and in_flight.kind == "register":
        applied = recovered is not None and recovered[0] == str(in_flight.incarnation)
        result.outcome(f"BrokerRegistration of broker {client.broker_id}", applied)
        if applied and found is not None and found["epoch"] > client.broker_epoch:
            client.incarnation, client.broker_epoch = in_flight.incarnation, found["epoch"]
            return
    if recovered != acked:
        result.problems.append(
            f"broker {client.broker_id}: (incarnation, epoch) {recovered} recovered, {acked} acknowledged"
        )


def _check_topics(
    client: ClientModel, topics: dict[str, dict[str, Any]], in_flight: InFlight | None, result: Reconciled
) -> set[str]:
    """Check the client's topics; return the names it accounts for."""
    claimed = set(client.topics) | client.deleted
    if in_flight is not None and in_flight.kind == "create":
        claimed.add(in_flight.topic)
        _adopt_created(client, topics.get(in_flight.topic), in_flight, result)
    if in_flight is not None and in_flight.kind == "delete":
        applied = in_flight.topic not in topics
        result.outcome(f"DeleteTopics of {in_flight.topic}", applied)
        if applied:
            del client.topics[in_flight.topic]
            client.deleted.add(in_flight.topic)
    for name in sorted(client.deleted & set(topics)):
        result.problems.append(f"topic {name}: deleted and acknowledged, but recovered")
    for name, topic in list(client.topics.items()):
        alter = in_flight if in_flight is not None and in_flight.kind == "alter" and in_flight.topic == name else None
        _check_topic(topic, topics.get(name), alter, result)
    return claimed


def _adopt_created(client: ClientModel, found: dict[str, Any] | None, in_flight: InFlight, result: Reconciled) -> None:
    result.outcome(f"CreateTopics of {in_flight.topic}", found is not None)
    if found is None:
        return
    expected = [PartitionModel.created(replicas) for replicas in in_flight.replicas]
    recovered = [PartitionModel.from_state(part) for part in found["partitions"]]
    if recovered != expected:
        result.problems.append(f"topic {in_flight.topic} (created in flight): {recovered} recovered, not {expected}")
    client.topics[in_flight.topic] = TopicModel(in_flight.topic, uuid.UUID(found["topic_id"]), recovered)


def _check_topic(topic: TopicModel, found: dict[str, Any] | None, alter: InFlight | None, result: Reconciled) -> None:
    if found is None:
        result.problems.append(f"topic {topic.name}: acknowledged, not recovered")
        return
    if found["topic_id"] != str(topic.topic_id):
        result.problems.append(f"topic {topic.name}: id {found['topic_id']} recovered, {topic.topic_id} acknowledged")
    recovered = [PartitionModel.from_state(part) for part in found["partitions"]]
    indexes = [part["partition"] for part in found["partitions"]]
    if indexes != list(range(len(topic.partitions))):
        result.problems.append(f"topic {topic.name}: partitions {indexes} recovered, {len(topic.partitions)} acked")
        return
    for index, (acked, part) in enumerate(zip(topic.partitions, recovered, strict=True)):
        allowed = [acked]
        if alter is not None and alter.partition == index:
            allowed.append(replace(acked, partition_epoch=acked.partition_epoch + 1, isr=alter.isr))
        if part not in allowed:
            result.problems.append(
                f"{topic.name}-{index}: {part} recovered, acknowledged {' or '.join(map(str, allowed))}"
            )
    if alter is not None:
        applied = recovered[alter.partition] != topic.partitions[alter.partition]
        result.outcome(f"AlterPartition of {topic.name}-{alter.partition}", applied)
    topic.partitions = recovered
