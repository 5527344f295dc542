"""Replaying partition records: the partitions, the per-broker indexes and the counts."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.state.cluster import ReplayError
from controller.state.model import PartitionRegistration, TopicPartition
from controller.state.replication import IsrChanges, ReplicationState
from protocol.records.metadata import (
    NO_LEADER,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tests.controller.one_partition import TOPIC, TP, U, change


# ---------------------------------------------------------------------- replay and indexes
def _state() -> ReplicationState:
    state = ReplicationState()
    state.replay_topic(TopicRecord(name="t", topic_id=TOPIC))
    state.replay_partition(
        PartitionRecord(
            partition_id=0, topic_id=TOPIC, replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=0, partition_epoch=0
        )
    )
    return state


def test_replay_keeps_the_per_broker_indexes() -> None:
    state = _state()
    assert (state.hosted_by(3), state.isrs_with(3), state.led_by(1)) == ([TP], [], [TP])
    state.replay_change(change(isr=(2, 3), leader=2))
    assert (state.isrs_with(1), state.isrs_with(3), state.led_by(1), state.led_by(2)) == ([], [TP], [], [TP])
    assert state.partition(TP) == PartitionRegistration(
        replicas=(1, 2, 3), isr=(2, 3), leader=2, leader_epoch=1, partition_epoch=1, directories=(U, U, U)
    )
    state.replay_change(change(leader=NO_LEADER))
    assert state.leaderless() == [TP] and state.led_by(2) == []
    state.replay_remove(RemoveTopicRecord(topic_id=TOPIC))
    assert state.topic_by_name("t") is None and state.hosted_by(1) == [] and state.isrs_with(2) == []


@pytest.mark.parametrize(
    "record",
    [
        TopicRecord(name="t", topic_id=uuid.UUID(int=8)),
        TopicRecord(name="u", topic_id=TOPIC),
        PartitionRecord(partition_id=0, topic_id=uuid.UUID(int=9)),
        PartitionChangeRecord(partition_id=5, topic_id=TOPIC),
        RemoveTopicRecord(topic_id=uuid.UUID(int=9)),
    ],
    ids=["name-taken", "id-taken", "partition-of-unknown-topic", "change-to-unknown-partition", "remove-unknown"],
)
def test_replay_refuses_records_that_do_not_apply(record: object) -> None:
    state = _state()
    with pytest.raises(ReplayError):
        if isinstance(record, TopicRecord):
            state.replay_topic(record)
        elif isinstance(record, PartitionRecord):
            state.replay_partition(record)
        elif isinstance(record, PartitionChangeRecord):
            state.replay_change(record)
        elif isinstance(record, RemoveTopicRecord):
            state.replay_remove(record)


# ---------------------------------------------------------------------- counts
#: (what, topic slot, partition index, leader): one replay, or nothing when it would not apply
Step = tuple[str, int, int, int]
STEPS = st.tuples(
    st.sampled_from(["topic", "partition", "leader", "isr", "remove"]),
    st.integers(0, 2),
    st.integers(0, 3),
    st.integers(NO_LEADER, 3),
)


def _replay_step(state: ReplicationState, step: Step) -> None:
    what, slot, index, leader = step
    topic_id = uuid.UUID(int=100 + slot)
    topic = state.topics.get(topic_id)
    if what == "topic" and topic is None:
        state.replay_topic(TopicRecord(name=f"t{slot}", topic_id=topic_id))
    elif what == "partition" and topic is not None:  # a new partition, or one replaced as a whole
        isr = (0, 1, 2, 3) if leader == NO_LEADER else (leader,)
        state.replay_partition(
            PartitionRecord(partition_id=index, topic_id=topic_id, replicas=(0, 1, 2, 3), isr=isr, leader=leader)
        )
    elif what in ("leader", "isr") and topic is not None and index in topic.partitions:
        fields = {"leader": leader} if what == "leader" else {"isr": (index, leader % 4)}
        state.replay_change(PartitionChangeRecord(partition_id=index, topic_id=topic_id, **fields))
    elif what == "remove" and topic is not None:
        state.replay_remove(RemoveTopicRecord(topic_id=topic_id))


@given(st.lists(STEPS, max_size=80))
def test_the_partition_counts_equal_a_recount_after_any_replays(steps: list[Step]) -> None:
    state = ReplicationState()
    for step in steps:
        _replay_step(state, step)
        partitions = [part for _, part in state.partitions()]
        assert state.partition_count == len(partitions)
        assert state.leaderless_count == sum(1 for part in partitions if part.leader == NO_LEADER)


def _indexed(state: ReplicationState) -> tuple[object, ...]:
    """What the per-broker indexes and the counts say, for brokers 0 to 3."""
    listed = [(state.hosted_by(b), state.isrs_with(b), state.led_by(b), state.in_isr_or_leading(b)) for b in range(4)]
    return state.partition_count, state.leaderless_count, listed


@given(st.lists(STEPS, max_size=60), st.lists(STEPS, max_size=20))
def test_indexes_built_after_a_deferred_replay_equal_those_kept_record_by_record(
    loaded: list[Step], later: list[Step]
) -> None:
    kept, deferred = ReplicationState(), ReplicationState()
    deferred.defer_indexes()
    for step in loaded:
        _replay_step(kept, step)
        _replay_step(deferred, step)
    deferred.build_indexes()
    assert _indexed(deferred) == _indexed(kept)
    for step in later:  # replay keeps them from there on
        _replay_step(kept, step)
        _replay_step(deferred, step)
    assert _indexed(deferred) == _indexed(kept)


def test_a_deferred_build_takes_partition_ids_past_the_bitmaps_and_only_an_empty_state_defers() -> None:
    kept, deferred = ReplicationState(), ReplicationState()
    deferred.defer_indexes()
    for state in (kept, deferred):
        state.replay_topic(TopicRecord(name="t", topic_id=TOPIC))
        for index in (2**31 - 1, 5, 0):
            state.replay_partition(
                PartitionRecord(partition_id=index, topic_id=TOPIC, replicas=(1, 2), isr=(2,), leader=2)
            )
    deferred.build_indexes()
    assert _indexed(deferred) == _indexed(kept) and [tp.partition for tp in deferred.hosted_by(1)] == [0, 5, 2**31 - 1]
    assert len(deferred.replica_of._members[1][TOPIC.int].bitmap) == 1  # sized by 0 and 5, not by the odd id
    with pytest.raises(ValueError, match="empty"):
        kept.defer_indexes()


def test_the_partition_counts_follow_creation_leader_changes_and_removal() -> None:
    state = _state()
    assert (state.partition_count, state.leaderless_count) == (1, 0)
    state.replay_change(change(leader=NO_LEADER))
    assert (state.partition_count, state.leaderless_count) == (1, 1)
    state.replay_partition(PartitionRecord(partition_id=1, topic_id=TOPIC, replicas=(1,), isr=(1,), leader=NO_LEADER))
    assert (state.partition_count, state.leaderless_count) == (2, 2)
    state.replay_change(change(leader=2))
    assert (state.partition_count, state.leaderless_count) == (2, 1)
    state.replay_remove(RemoveTopicRecord(topic_id=TOPIC))
    assert (state.partition_count, state.leaderless_count) == (0, 0)


# ---------------------------------------------------------------------- ISR shrinks and expands
@pytest.mark.parametrize(
    ("isr", "expected"),
    [
        ((1,), IsrChanges(shrinks=1)),  # a member out
        ((1, 2, 3), IsrChanges(expands=1)),  # a member in
        ((1, 3), IsrChanges(shrinks=1, expands=1)),  # the same size, but 2 left and 3 joined
        ((2, 1), IsrChanges()),  # reordered: nobody left or joined
    ],
    ids=["shrink", "expand", "swap", "reorder"],
)
def test_an_isr_change_counts_as_a_shrink_if_a_member_left_and_an_expand_if_one_joined(
    isr: tuple[int, ...], expected: IsrChanges
) -> None:
    state = _state()  # ISR (1, 2)
    state.replay_change(change(isr=isr))
    assert state.isr_changes == expected


@given(st.lists(STEPS, max_size=80))
def test_isr_changes_count_the_changes_that_dropped_or_added_members_and_nothing_else(steps: list[Step]) -> None:
    state, expected = ReplicationState(), IsrChanges()
    for step in steps:
        what, slot, index, _ = step
        tp = TopicPartition(uuid.UUID(int=100 + slot), index)
        before = state.partition(tp)
        _replay_step(state, step)  # partitions created, replaced and removed too: none of them counts
        after = state.partition(tp)
        if what == "isr" and before is not None and after is not None:
            dropped, added = set(before.isr) - set(after.isr), set(after.isr) - set(before.isr)
            expected = IsrChanges(expected.shrinks + bool(dropped), expected.expands + bool(added))
        assert state.isr_changes == expected


def test_changes_that_leave_the_isr_alone_and_creations_and_removals_are_not_isr_changes() -> None:
    state = _state()
    state.replay_change(change(leader=2))
    state.replay_change(change(leader=NO_LEADER))
    state.replay_partition(PartitionRecord(partition_id=1, topic_id=TOPIC, replicas=(1,), isr=(1,), leader=1))
    state.replay_remove(RemoveTopicRecord(topic_id=TOPIC))
    assert state.isr_changes == IsrChanges()


def test_isr_changes_are_running_totals_and_since_subtracts_an_earlier_total() -> None:
    state = _state()
    state.replay_change(change(isr=(1,)))
    start = state.isr_changes
    state.replay_change(change(isr=(1, 2)))
    state.replay_change(change(isr=(1, 2, 3)))
    state.replay_change(change(isr=(3,)))
    assert state.isr_changes == IsrChanges(shrinks=2, expands=2)
    assert state.isr_changes.since(start) == IsrChanges(shrinks=1, expands=2)
    assert start == IsrChanges(shrinks=1)  # an earlier total does not move
