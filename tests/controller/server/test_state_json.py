"""The /state document (controller.server.state_json): `state_json` and its text in pieces, `state_json_pieces`."""

from __future__ import annotations

import dataclasses
import functools
import json
import uuid
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from controller.engine import ControllerEngine
from controller.log.ids import uuid_string
from controller.server.state_json import PARTITIONS_PER_PIECE, state_json, state_json_pieces
from controller.state.frozen import FrozenState, FrozenTopic
from controller.state.model import RECOVERED, RECOVERING, PartitionRegistration
from protocol.messages.alter_replica_state import OFFLINE
from protocol.records.metadata import LOST_DIRECTORY, NO_LEADER, UNASSIGNED_DIRECTORY

from ..harness import CLUSTER_ID, Harness, incarnation
from ..test_engine import workload
from .test_metrics import fenced_cluster


def test_state_json_describes_brokers_topics_and_partitions_sorted() -> None:
    h = fenced_cluster()
    h.alter_replica_state(2, "spread", [0], OFFLINE)
    state = state_json(h.core)

    assert json.loads(json.dumps(state)) == state  # JSON-ready as it is
    assert state["cluster_id"] == CLUSTER_ID
    assert state["controller_id"] == 3000
    assert state["controller_epoch"] == 0
    assert state["last_applied_offset"] == h.core.state.last_offset
    brokers = state["brokers"]
    assert isinstance(brokers, list)
    assert [b["id"] for b in brokers] == [1, 2, 3]
    assert brokers[2] == {
        "id": 3,
        "epoch": h.epoch(3),
        "incarnation_id": str(incarnation(3)),
        "fenced": True,
        "in_controlled_shutdown": False,
        "rack": None,
        "listeners": [{"name": "PLAINTEXT", "host": "localhost", "port": 9003}],
    }
    topics = state["topics"]
    assert isinstance(topics, list)
    assert [t["name"] for t in topics] == ["solo", "spread"]
    solo, spread = topics
    assert solo["topic_id"] == str(h.topic_id("solo"))
    assert uuid.UUID(solo["topic_id"]) == h.topic_id("solo")
    assert solo["topic_id_base64"] == uuid_string(h.topic_id("solo"))
    assert solo["partitions"] == [
        {
            "partition": 0,
            "leader": -1,
            "leader_epoch": 1,
            "partition_epoch": 1,
            "isr": [3],
            "replicas": [3],
            "offline_replicas": [],
            "leader_recovery_state": 0,
        }
    ]
    assert [p["partition"] for p in spread["partitions"]] == [0, 1]
    first = spread["partitions"][0]
    assert first["replicas"] == [1, 2, 3]
    assert first["offline_replicas"] == [2]
    assert first["isr"] == [1]
    assert first["leader"] == 1


def test_state_json_of_an_empty_controller() -> None:
    h = Harness()
    state = state_json(h.core)
    assert state == {
        "cluster_id": CLUSTER_ID,
        "controller_id": 3000,
        "controller_epoch": 0,
        "last_applied_offset": -1,
        "brokers": [],
        "features": {},
        "zk_migration_state": None,
        "controllers": [],
        "producer_ids": None,
        "acl_count": 0,
        "configs": [],
        "acls": [],
        "client_quotas": [],
        "scram_users": [],
        "delegation_tokens": [],
        "topics": [],
    }


def test_state_json_of_an_engine_is_its_frozen_state(tmp_path: Path) -> None:
    """Given a view of the engine's state (the engine itself, as /state has it), `state_json`
    freezes it first: the document is that of `engine.freeze()`, which is its core's."""
    engine = ControllerEngine.start(tmp_path / "data", fsync=False, now_ns=0)
    try:
        workload(engine, rounds=0)  # brokers 1-3, "orders" with 4 partitions of 3 replicas
        frozen = engine.freeze()
        assert frozen == engine.core.freeze()
        state = state_json(engine)
        assert state == state_json(frozen)
        assert state["last_applied_offset"] == engine.core.state.last_offset
        brokers, topics = state["brokers"], state["topics"]
        assert isinstance(brokers, list) and isinstance(topics, list)
        assert [b["id"] for b in brokers] == [1, 2, 3]
        assert [t["name"] for t in topics] == ["orders"]
    finally:
        engine.close()


# ---------------------------------------------------------------------------- pieces
@st.composite
def registrations(draw: st.DrawFn) -> PartitionRegistration:
    replicas = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)))
    isr = tuple(draw(st.permutations(replicas))[: draw(st.integers(1, len(replicas)))])
    lost = draw(st.lists(st.booleans(), min_size=len(replicas), max_size=len(replicas)))
    return PartitionRegistration(
        replicas=replicas,
        isr=isr,
        leader=draw(st.sampled_from((NO_LEADER, *isr))),
        leader_epoch=draw(st.integers(0, 2**31 - 1)),
        partition_epoch=draw(st.integers(0, 2**31 - 1)),
        leader_recovery_state=draw(st.sampled_from((RECOVERED, RECOVERING))),
        directories=tuple(LOST_DIRECTORY if gone else UNASSIGNED_DIRECTORY for gone in lost),
    )


LOST = LOST_DIRECTORY
TOPICS = st.dictionaries(st.text(min_size=1, max_size=4), st.lists(registrations(), max_size=5), max_size=3)


@functools.cache
def fenced_frozen() -> FrozenState:
    return fenced_cluster().core.freeze()  # immutable: one for every example


def with_topics(frozen: FrozenState, topics: dict[str, list[PartitionRegistration]]) -> FrozenState:
    """`frozen` with these topics added, their partitions stored out of index order."""
    added = tuple(
        FrozenTopic(uuid.UUID(int=1000 + number), name, dict(reversed(list(enumerate(parts)))))
        for number, (name, parts) in enumerate(topics.items())
    )
    return dataclasses.replace(frozen, topics=frozen.topics + added)


def expected_topic(topic: FrozenTopic) -> dict[str, object]:
    """The oracle: what the document says of a topic, written out field by field."""
    partitions = [
        {
            "partition": index,
            "leader": part.leader,
            "leader_epoch": part.leader_epoch,
            "partition_epoch": part.partition_epoch,
            "isr": list(part.isr),
            "replicas": list(part.replicas),
            "offline_replicas": [r for r, d in zip(part.replicas, part.directories, strict=True) if d == LOST],
            "leader_recovery_state": part.leader_recovery_state,
        }
        for index, part in sorted(topic.partitions.items())
    ]
    identity = {"name": topic.name, "topic_id": str(topic.topic_id), "topic_id_base64": uuid_string(topic.topic_id)}
    return {**identity, "partitions": partitions}


@given(topics=TOPICS, per_piece=st.integers(1, 4))
def test_the_text_says_what_each_partition_is_however_it_is_cut(
    topics: dict[str, list[PartitionRegistration]], per_piece: int
) -> None:
    frozen = with_topics(fenced_frozen(), topics)
    text = "".join(state_json_pieces(frozen, per_piece))
    assert text == "".join(state_json_pieces(frozen))
    assert text.endswith("}\n") and text.isascii()  # non-ASCII names are escaped
    document = json.loads(text)
    assert document["topics"] == [expected_topic(topic) for topic in frozen.sorted_topics()]
    assert document == state_json(frozen)


def test_no_piece_holds_more_than_its_share_of_partitions() -> None:
    """However large a topic, the body is gathered from small pieces, never built as one string."""
    part = PartitionRegistration((1, 2), (1, 2), 1, 0, 0)
    sizes = {"a": PARTITIONS_PER_PIECE * 2 + 1, "b": 5, "c": PARTITIONS_PER_PIECE}
    frozen = with_topics(Harness().core.freeze(), {name: [part] * size for name, size in sizes.items()})
    per_piece = [piece.count('"partition": ') for piece in state_json_pieces(frozen)]
    assert max(per_piece) == PARTITIONS_PER_PIECE
    assert sum(per_piece) == sum(sizes.values())
