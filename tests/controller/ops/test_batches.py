"""Operations over many partitions are written in bounded batches (controller.ops.batches).

Each scenario runs twice: with an operation limit of 3 records (so every large operation is
split) and with Kafka's 10,000 (one batch each). Splitting must change nothing but the batches:
the same responses, the same records in the same order, the same final state; every batch
within the limit; the broker's own record where the rules put it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from controller.ops.batches import STEP_PARTITIONS, batches, step_size
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.records.metadata import (
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    EndTransactionRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from protocol.records.transactions import MARKERS
from protocol.spec import Data

from ..harness import Harness

LIMIT = 3
PARTITIONS = 8  # broker 1 hosts, and leads, every partition of "big"


def cluster(limit: int) -> Harness:
    """Three brokers and a topic led by broker 1; from then on, operations limited to `limit` records."""
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("big", assignments=[[1, 2, 3]] * PARTITIONS)
    h.core.state.config = dataclasses.replace(h.core.state.config, max_records_per_operation=limit)
    h.batches.clear()
    return h


def run_both(
    scenario: Callable[[Harness], Any], setup: Callable[[Harness], object] | None = None
) -> tuple[Harness, Harness, Any]:
    """(split harness, whole harness, scenario's result): asserts both agree on everything.

    `setup` runs first in both without a limit (so both logs hold the same offsets when the
    scenario starts), then `scenario` with the split harness limited to `LIMIT` records. An
    operation it splits is one metadata transaction: a batch of its own holding the
    BeginTransactionRecord first, one holding the EndTransactionRecord last (checked here, then
    taken out of `split.batches`, which keeps the data batches)."""
    split, whole = cluster(LIMIT), cluster(10_000)
    if setup is not None:
        for h in (split, whole):
            limit = h.core.state.config
            h.core.state.config = dataclasses.replace(limit, max_records_per_operation=10_000)
            setup(h)
            h.core.state.config = limit
            h.batches.clear()
    split_result, whole_result = scenario(split), scenario(whole)
    assert split_result == whole_result
    assert not any(isinstance(record, MARKERS) for batch in whole.batches for record in batch)
    data = unframed(split.batches)
    assert [record for batch in data for record in batch] == [record for batch in whole.batches for record in batch]
    assert split.core.durable_view() == whole.core.durable_view()
    assert all(len(batch) <= LIMIT for batch in split.batches), [len(batch) for batch in split.batches]
    split.batches[:] = data
    return split, whole, split_result


def unframed(batches: list[list[Data]]) -> list[list[Data]]:
    """The data batches of one operation: asserts that an operation of several batches is framed
    by a Begin and an End, each alone in its batch, and that no other marker stands anywhere."""
    markers = [(i, kinds(batch)) for i, batch in enumerate(batches) if any(isinstance(r, MARKERS) for r in batch)]
    if len(batches) <= 1:
        assert not markers, "an operation of one batch is atomic by itself"
        return batches
    assert len(markers) == 2, markers
    (begin, begun), (end, ended) = markers
    assert (begin, begun) == (0, ["BeginTransactionRecord"])
    assert (end, ended) == (len(batches) - 1, ["EndTransactionRecord"])
    return batches[1:-1]


def kinds(batch: list[Data]) -> list[str]:
    return [type(record).__name__ for record in batch]


def test_the_step_never_exceeds_the_operation_limit() -> None:
    assert step_size(Harness(max_records_per_operation=3).core.state) == 3
    assert step_size(Harness().core.state) == STEP_PARTITIONS


def test_session_fencing_is_split_with_the_flag_last() -> None:
    def expire(h: Harness) -> list[list[Data]]:
        h.heartbeat(2)
        h.heartbeat(3)
        h.now_ns += 9_500_000_000
        h.heartbeat(2)
        h.heartbeat(3)
        return h.advance(0)

    split, whole, fenced = run_both(expire)
    assert len(fenced) == 1 and len(fenced[0]) == PARTITIONS + 1
    assert len(whole.batches) == 1
    assert len(split.batches) == 3
    assert kinds(split.batches[-1])[-1] == "BrokerRegistrationChangeRecord"
    assert all(isinstance(record, PartitionChangeRecord) for batch in split.batches[:-1] for record in batch)
    assert split.core.state.cluster.brokers[1].fenced


def test_controlled_shutdown_is_split_with_the_flag_first() -> None:
    def shut_down(h: Harness) -> tuple[Any, list[Data]]:
        return h.controlled_shutdown(1)

    split, _, (response, _) = run_both(shut_down)
    assert response.error_code == 0 and response.remaining_partitions == ()
    assert len(split.batches) == 3
    flag = split.batches[0][0]
    assert isinstance(flag, BrokerRegistrationChangeRecord) and flag.in_controlled_shutdown == 1
    assert not split.core.state.replication.led_by(1)


def test_controlled_shutdown_reports_the_stuck_leaderships_after_every_batch() -> None:
    def setup(h: Harness) -> None:
        h.create_topic("alone", assignments=[[1, 2]] * 5)
        h.heartbeat(2, want_fence=True)  # broker 2 fenced: nobody may take over "alone"

    def shut_down(h: Harness) -> tuple[Any, list[Data]]:
        return h.controlled_shutdown(1)

    split, _, (response, _) = run_both(shut_down, setup)
    assert [(p.topic_name, p.partition_index) for p in response.remaining_partitions] == [
        ("alone", index) for index in range(5)
    ]
    assert len(split.batches) > 1


def test_want_shut_down_with_nothing_to_hand_over_is_flagged_then_fenced_in_batches() -> None:
    def shut_down(h: Harness) -> tuple[bool, bool]:
        response = h.heartbeat(1, want_shut_down=True)
        return response.is_fenced, response.should_shut_down

    split, _, result = run_both(shut_down, lambda h: h.controlled_shutdown(1))
    assert result == (True, True)
    assert split.core.state.cluster.brokers[1].fenced


def test_unfencing_elects_the_broker_in_batches_with_the_flag_first() -> None:
    def setup(h: Harness) -> None:
        h.heartbeat(2, want_fence=True)
        h.heartbeat(3, want_fence=True)
        h.heartbeat(1, want_fence=True)  # every partition leaderless, broker 1 the last in the ISRs

    def unfence(h: Harness) -> bool:
        return h.heartbeat(1).is_fenced

    split, _, fenced = run_both(unfence, setup)
    assert fenced is False
    assert kinds(split.batches[0])[0] == "BrokerRegistrationChangeRecord"
    assert len(split.batches) == 3
    assert all(
        part.leader == 1 for part in split.core.state.replication.topics[split.topic_id("big")].partitions.values()
    )


def test_a_new_incarnation_brings_its_replicas_online_in_batches_after_its_registration() -> None:
    """The one split operation whose records differ from the whole one's: inside a transaction
    the registration stands one offset further (after the Begin), and so does the broker epoch,
    which is its record's offset."""
    views = []
    for limit in (LIMIT, 10_000):
        h = cluster(10_000)
        h.alter_replica_state(2, "big", list(range(PARTITIONS)), OFFLINE)
        h.heartbeat(2, want_fence=True)
        h.core.state.config = dataclasses.replace(h.core.state.config, max_records_per_operation=limit)
        h.batches.clear()
        start = h.next_offset
        epoch = h.register(2, generation=1)
        registration = next(record for record, _, offset in h.log if offset == epoch)
        assert isinstance(registration, RegisterBrokerRecord) and registration.broker_epoch == epoch
        data = unframed(h.batches)
        assert epoch == start + (1 if limit == LIMIT else 0)
        assert len(data) == (3 if limit == LIMIT else 1) and data[0][0] is registration
        assert all(len(batch) <= limit for batch in h.batches)
        topic = h.core.state.replication.topics[h.topic_id("big")]
        assert not any(part.is_offline(2) for part in topic.partitions.values())
        brokers, topics, kept = h.core.durable_view()
        views.append(({b: dataclasses.replace(r, epoch=0) for b, r in brokers.items()}, topics, kept))  # type: ignore[attr-defined]
    assert views[0] == views[1]


@pytest.mark.parametrize("new_state", [OFFLINE, ONLINE])
def test_alter_replica_state_is_split_and_answers_every_partition_in_order(new_state: int) -> None:
    def setup(h: Harness) -> None:
        if new_state == ONLINE:
            h.alter_replica_state(2, "big", list(range(PARTITIONS)), OFFLINE)

    def alter(h: Harness) -> list[tuple[int, int]]:
        wanted = [7, 0, 3, 0, 99, 5, 1, 2, 4, 6]  # a duplicate and an unknown partition among them
        response, _ = h.alter_replica_state(2, "big", wanted, new_state)
        return [(p.partition_index, p.error_code) for p in response.topics[0].partitions]

    split, _, answers = run_both(alter, setup)
    assert answers[3] == (0, ErrorCode.INVALID_REQUEST)
    assert answers[4] == (99, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert [index for index, _ in answers] == [7, 0, 3, 0, 99, 5, 1, 2, 4, 6]
    assert len(split.batches) > 1


def test_alter_partition_is_split_and_a_partition_named_twice_is_refused_across_batches() -> None:
    def shrink(h: Harness) -> list[tuple[int, int, tuple[int, ...]]]:
        indexes = [0, 1, 2, 3, 4, 5, 0, 6, 7]
        data = [Harness.isr_data(2, index, [1, 2], h.partition("big", index).leader_epoch, 0) for index in indexes]
        topic = AlterPartitionRequestTopicData(topic_id=h.topic_id("big"), partitions=tuple(data))
        request = AlterPartitionRequest(broker_id=1, broker_epoch=h.epoch(1), topics=(topic,))
        response, _ = h.send(request, 2)
        return [(p.partition_index, p.error_code, tuple(p.isr)) for p in response.topics[0].partitions]

    split, _, answers = run_both(shrink)
    assert answers[6] == (0, ErrorCode.INVALID_REQUEST, ())
    assert [code for _, code, _ in answers].count(0) == PARTITIONS
    assert len(split.batches) == 3


def test_batches_yields_every_step_and_a_transaction_only_around_records() -> None:
    """Every step is yielded (the shell paces between them); an operation that writes nothing
    writes no transaction, and one whose first record comes late opens it just before that."""
    h = Harness(max_records_per_operation=2)
    steps = list(batches(h.core.state, range(5), lambda item: None, name="five", first=[], last=[]))
    assert steps == [[], [], []]
    change = PartitionChangeRecord(partition_id=0)
    late = list(batches(h.core.state, range(5), lambda i: change if i == 3 else None, name="five"))
    begin, end = BeginTransactionRecord(name="five"), EndTransactionRecord()
    assert late == [[], [(begin, 0)], [(change, 0)], [], [(end, 0)]]


def test_a_large_alter_partition_refused_in_full_writes_nothing() -> None:
    """More partitions than one step, every one refused (an unknown topic): no records, not even
    an empty transaction (the log's end must not move for a refused request)."""
    h = cluster(10_000)
    end = h.next_offset
    unknown = AlterPartitionRequestTopicData(
        topic_name="no-such-topic",
        partitions=tuple(
            AlterPartitionRequestPartitionData(partition_index=i, leader_epoch=0, new_isr=(1, 2), partition_epoch=0)
            for i in range(STEP_PARTITIONS + 1)
        ),
    )
    response, records = h.send(AlterPartitionRequest(broker_id=1, broker_epoch=h.epoch(1), topics=(unknown,)), 0)
    assert all(p.error_code != ErrorCode.NONE for t in response.topics for p in t.partitions)
    assert records == [] and h.next_offset == end


def test_an_operation_that_fits_one_batch_is_not_a_transaction() -> None:
    h = Harness(max_records_per_operation=3)
    change = PartitionChangeRecord(partition_id=0)
    steps = list(batches(h.core.state, range(2), lambda item: change, name="two", last=[(change, 0)]))
    assert steps == [[(change, 0)] * 3]
