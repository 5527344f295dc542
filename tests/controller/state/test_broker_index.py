"""The per-broker partition bitmaps (controller.state.broker_index)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from controller.state.broker_index import DENSE_LIMIT, BrokerIndex

A, B = 1, 2 << 100  # topics: the ints of their ids


def test_members_come_in_partition_order_per_broker_and_topic() -> None:
    index = BrokerIndex()
    for partition in (17, 3, 0, 8, 9, 1000):
        index.add(1, A, partition)
    index.add(1, B, 5)
    index.add(2, A, 4)
    index.discard(1, A, 8)
    index.discard(1, A, 999)  # not a member: nothing
    index.discard(3, A, 0)  # no such broker: nothing
    assert index.partitions(1, A) == [0, 3, 9, 17, 1000]
    assert (index.partitions(1, B), index.partitions(2, A), index.partitions(2, B)) == ([5], [4], [])
    assert set(index.topics_of(1)) == {A, B} and list(index.topics_of(3)) == []


def test_an_id_past_the_dense_limit_costs_a_set_entry_not_a_bitmap() -> None:
    index = BrokerIndex()
    index.add(1, A, 2**31 - 1)
    index.add(1, A, 2)
    index.add(1, A, -1)  # no valid record has one; kept all the same
    assert index.partitions(1, A) == [-1, 2, 2**31 - 1]
    assert len(index._members[1][A].bitmap) == 1  # the point of the rule
    index.discard(1, A, 2**31 - 1)
    assert index.partitions(1, A) == [-1, 2]
    assert DENSE_LIMIT <= 2**31 - 1


def test_a_forgotten_topic_has_no_members_left() -> None:
    index = BrokerIndex()
    index.add(1, A, 0)
    index.add(2, A, 1)
    index.add(2, B, 1)
    index.forget_topic(A)
    assert index.partitions(1, A) == index.partitions(2, A) == [] and list(index.topics_of(2)) == [B]


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 70)), max_size=200))
def test_it_agrees_with_a_set_of_members(operations: list[tuple[bool, int, int]]) -> None:
    index, members = BrokerIndex(), set()
    for add, broker, partition in operations:
        topic = random.Random(partition).choice((A, B))
        if add:
            index.add(broker, topic, partition)
            members.add((broker, topic, partition))
        else:
            index.discard(broker, topic, partition)
            members.discard((broker, topic, partition))
    for broker in range(4):
        for topic in (A, B):
            assert index.partitions(broker, topic) == sorted(p for b, t, p in members if (b, t) == (broker, topic))


def test_a_move_touches_only_the_brokers_that_left_or_joined() -> None:
    index = BrokerIndex()
    index.move(A, 7, (), (1, 2, 3))
    index.move(A, 7, (1, 2, 3), (3, 4))  # 1 and 2 leave, 3 stays, 4 joins
    assert [index.partitions(broker, A) for broker in (1, 2, 3, 4)] == [[], [], [7], [7]]
    index.move(A, 2**40, (), (1,))  # past the dense limit: the set
    assert index.partitions(1, A) == [2**40]
