"""The frozen copy of the state (controller.state.frozen): consistent, private, and incremental."""

from __future__ import annotations

from controller.ops.snapshot import snapshot_records
from controller.state.frozen import freeze
from protocol.records.metadata import PartitionRecord

from ..harness import Harness


def cluster() -> Harness:
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("a", partitions=3)
    h.create_topic("b", partitions=2)
    return h


def test_a_frozen_state_does_not_see_later_changes() -> None:
    h = cluster()
    frozen = freeze(h.core.state)
    before = list(snapshot_records(frozen))
    h.alter_isr("a", 0, [h.partition("a", 0).leader])
    h.create_topic("c")
    assert list(snapshot_records(frozen)) == before
    assert {topic.name for topic in frozen.topics} == {"a", "b"}
    assert list(snapshot_records(freeze(h.core.state))) != before


def test_a_freeze_reuses_the_copies_of_topics_no_replay_changed() -> None:
    h = cluster()
    first = {topic.name: topic for topic in freeze(h.core.state).topics}
    h.alter_isr("a", 0, [h.partition("a", 0).leader])
    second = {topic.name: topic for topic in freeze(h.core.state).topics}
    assert second["b"] is first["b"]
    assert second["a"] is not first["a"]
    assert second["a"].partitions[0] == h.partition("a", 0) != first["a"].partitions[0]


def test_snapshot_records_rebuild_the_same_state() -> None:
    h = cluster()
    h.alter_isr("b", 1, [h.partition("b", 1).leader])
    records = list(snapshot_records(freeze(h.core.state)))
    assert sum(isinstance(record, PartitionRecord) for record, _ in records) == 5
    fresh = Harness().core
    for offset, (record, _) in enumerate(records):
        fresh.replay(record, offset)
    assert fresh.durable_view() == h.core.durable_view()
