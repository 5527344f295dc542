"""model.reconcile: a recovered /state must hold every acknowledged change and nothing else but the
effect of the requests in flight."""

from __future__ import annotations

import uuid
from typing import Any

from .model import ClientModel, InFlight, PartitionModel, TopicModel, reconcile

REPLICAS = (1, 2, 3)
TOPIC_ID = uuid.UUID(int=7)
INCARNATION = uuid.UUID(int=42)
DATA_EPOCHS = {1: 2, 2: 4, 3: 6}


def client() -> ClientModel:
    shrunk = PartitionModel(REPLICAS, 1, 0, 1, (1, 2))
    topic = TopicModel("c0-t0", TOPIC_ID, [PartitionModel.created(REPLICAS), shrunk])
    return ClientModel(0, 100, {"c0-t0": topic}, {"c0-t9"}, 10, INCARNATION, 50)


def partition(index: int, part: PartitionModel) -> dict[str, Any]:
    fields = ("partition", "leader", "leader_epoch", "partition_epoch", "isr", "replicas")
    values = (index, part.leader, part.leader_epoch, part.partition_epoch, list(part.isr), list(part.replicas))
    return dict(zip(fields, values, strict=True))


def state(model: ClientModel) -> dict[str, Any]:
    brokers = [
        {"id": broker, "epoch": epoch, "incarnation_id": str(uuid.UUID(int=broker))}
        for broker, epoch in DATA_EPOCHS.items()
    ]
    brokers.append({"id": 100, "epoch": model.broker_epoch, "incarnation_id": str(model.incarnation)})
    topics = [
        {
            "name": t.name,
            "topic_id": str(t.topic_id),
            "partitions": [partition(i, p) for i, p in enumerate(t.partitions)],
        }
        for t in model.topics.values()
    ]
    return {"brokers": brokers, "topics": topics}


def test_the_acknowledged_state_recovered_exactly_passes() -> None:
    model = client()
    result = reconcile([model], DATA_EPOCHS, state(model))
    assert result.problems == [] and result.outcomes == []


def test_a_lost_isr_change_is_a_problem() -> None:
    model = client()
    recovered = state(model)
    recovered["topics"][0]["partitions"][1].update(partition_epoch=0, isr=[1, 2, 3])
    assert [p for p in reconcile([model], DATA_EPOCHS, recovered).problems if "c0-t0-1" in p]


def test_an_isr_change_in_flight_may_be_applied_and_is_adopted() -> None:
    model = client()
    recovered = state(model)
    recovered["topics"][0]["partitions"][1].update(partition_epoch=2, isr=[1, 2, 3])
    model.in_flight = InFlight("alter", "c0-t0", 1, REPLICAS)
    result = reconcile([model], DATA_EPOCHS, recovered)
    assert result.problems == [] and result.outcomes == ["AlterPartition of c0-t0-1: applied"]
    assert model.topics["c0-t0"].partitions[1].partition_epoch == 2 and model.in_flight is None


def test_a_missing_partition_a_resurrected_topic_and_a_stranger_are_problems() -> None:
    model = client()
    recovered = state(model)
    del recovered["topics"][0]["partitions"][1]
    recovered["topics"].append({"name": "c0-t9", "topic_id": str(uuid.UUID(int=9)), "partitions": []})
    recovered["topics"].append({"name": "nobody", "topic_id": str(uuid.UUID(int=10)), "partitions": []})
    problems = reconcile([model], DATA_EPOCHS, recovered).problems
    assert len(problems) == 3, problems


def test_a_lost_registration_is_a_problem_and_one_in_flight_is_adopted() -> None:
    model = client()
    recovered = state(model)
    recovered["brokers"][-1].update(epoch=30, incarnation_id=str(uuid.UUID(int=41)))
    assert len(reconcile([model], DATA_EPOCHS, recovered).problems) == 1
    recovered["brokers"][-1].update(epoch=80, incarnation_id=str(uuid.UUID(int=43)))
    model.in_flight = InFlight("register", incarnation=uuid.UUID(int=43))
    assert reconcile([model], DATA_EPOCHS, recovered).problems == []
    assert (model.incarnation, model.broker_epoch) == (uuid.UUID(int=43), 80)


def test_a_creation_in_flight_is_adopted_with_its_partitions() -> None:
    model = client()
    recovered = state(model)
    replicas = ((2, 3, 1), (3, 1, 2))
    created = [partition(i, PartitionModel.created(r)) for i, r in enumerate(replicas)]
    recovered["topics"].append({"name": "c0-t10", "topic_id": str(uuid.UUID(int=11)), "partitions": created})
    model.in_flight = InFlight("create", "c0-t10", replicas=replicas)
    assert reconcile([model], DATA_EPOCHS, recovered).problems == []
    assert [p.leader for p in model.topics["c0-t10"].partitions] == [2, 3]
