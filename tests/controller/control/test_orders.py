"""Propagation to brokers (semantics.md): which LeaderAndIsr and StopReplica orders committed records call for."""

from __future__ import annotations

import dataclasses
import uuid

from controller.control.orders import (
    FULL_STATE_SLICE_PARTITIONS,
    ControlOrder,
    PartitionState,
    StopPartition,
    full_state_orders,
)
from controller.slices import finish
from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.elect_leaders import PREFERRED, ElectLeadersRequest, ElectLeadersRequestTopicPartitions
from protocol.records.control import LeaderChangeMessage

from ..harness import Harness

CONTROLLER_ID = 3000


def cluster(*broker_ids: int) -> Harness:
    h = Harness()
    h.start_brokers(*broker_ids)
    return h


def kinds(orders: list[ControlOrder]) -> list[tuple[int, str]]:
    return [(order.broker_id, order.kind) for order in orders]


def state_of(h: Harness, name: str, index: int = 0, is_new: bool = False) -> PartitionState:
    part = h.partition(name, index)
    return PartitionState(
        topic_name=name,
        topic_id=h.topic_id(name),
        partition=index,
        leader=part.leader,
        leader_epoch=part.leader_epoch,
        isr=part.isr,
        partition_epoch=part.partition_epoch,
        replicas=part.replicas,
        leader_recovery_state=part.leader_recovery_state,
        is_new=is_new,
    )


def leader_and_isr(h: Harness, broker_id: int, *states: PartitionState, full: bool = False) -> ControlOrder:
    return ControlOrder(
        broker_id=broker_id,
        broker_epoch=h.epoch(broker_id),
        controller_id=CONTROLLER_ID,
        controller_epoch=h.core.state.controller_epoch,
        partitions=states,
        full=full,
    )


def stop_replica(h: Harness, broker_id: int, *stops: StopPartition) -> ControlOrder:
    return ControlOrder(
        broker_id=broker_id,
        broker_epoch=h.epoch(broker_id),
        controller_id=CONTROLLER_ID,
        controller_epoch=h.core.state.controller_epoch,
        stops=stops,
    )


def stop(
    h: Harness, name: str, leader_epoch: int, delete: bool = False, topic_id: uuid.UUID | None = None
) -> StopPartition:
    return StopPartition(name, topic_id or h.topic_id(name), 0, leader_epoch, delete)


# ---------------------------------------------------------------------- LeaderAndIsr
def test_creation_goes_to_every_replica_with_a_listener() -> None:
    h = cluster(0, 1, 2, 3)
    h.take_orders()
    h.create_topic("t", assignments=[[0, 1, 2]])
    new = state_of(h, "t", is_new=True)
    assert h.take_orders() == [leader_and_isr(h, b, new) for b in (0, 1, 2)]


def test_orders_carry_controller_id_and_epoch_and_the_destination_broker_epoch() -> None:
    h = cluster(0, 1, 2)
    h.core.replay(LeaderChangeMessage(leader_id=CONTROLLER_ID), h.next_offset, epoch=7)
    h.take_orders()
    h.create_topic("t", assignments=[[0, 1, 2]])
    orders = h.take_orders()
    assert [(o.controller_id, o.controller_epoch) for o in orders] == [(CONTROLLER_ID, 7)] * 3
    assert [o.broker_epoch for o in orders] == [h.epoch(0), h.epoch(1), h.epoch(2)]
    assert len({o.broker_epoch for o in orders}) == 3


def test_isr_change_goes_to_every_replica() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.take_orders()
    h.alter_isr("t", 0, [0, 1])
    changed = state_of(h, "t")
    assert changed.isr == (0, 1) and changed.partition_epoch == 1
    assert h.take_orders() == [leader_and_isr(h, b, changed) for b in (0, 1, 2)]


def test_leader_change_goes_to_every_replica() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[1, 0, 2]])
    h.heartbeat(1, want_fence=True)
    h.heartbeat(1)
    h.alter_isr("t", 0, [0, 2, 1])
    h.take_orders()
    request = ElectLeadersRequest(
        election_type=PREFERRED, topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(0,)),)
    )
    h.send(request, 1)
    elected = state_of(h, "t")
    assert (elected.leader, elected.leader_epoch) == (1, 2)
    assert h.take_orders() == [leader_and_isr(h, b, elected) for b in (0, 1, 2)]


def test_no_op_and_rejected_requests_send_nothing() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.take_orders()
    h.alter_isr("t", 0, [0, 1, 2])
    h.alter_isr("t", 0, [0, 1], broker_id=1)
    assert h.take_orders() == []


# ---------------------------------------------------------------------- offline and online replicas
def test_offline_follower_gets_stop_replica_and_no_leader_and_isr() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.take_orders()
    h.alter_replica_state(2, "t", [0], OFFLINE)
    changed = state_of(h, "t")
    assert h.take_orders() == [
        leader_and_isr(h, 0, changed),
        leader_and_isr(h, 1, changed),
        stop_replica(h, 2, stop(h, "t", leader_epoch=0)),
    ]


def test_offline_leader_gets_stop_replica_with_the_current_leader_epoch() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.take_orders()
    h.alter_replica_state(0, "t", [0], OFFLINE)
    changed = state_of(h, "t")
    assert (changed.leader, changed.leader_epoch) == (1, 1)
    assert h.take_orders() == [
        stop_replica(h, 0, stop(h, "t", leader_epoch=1)),
        leader_and_isr(h, 1, changed),
        leader_and_isr(h, 2, changed),
    ]


def test_online_goes_to_every_replica() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.alter_replica_state(2, "t", [0], OFFLINE)
    h.take_orders()
    h.alter_replica_state(2, "t", [0], ONLINE)
    changed = state_of(h, "t")
    assert h.take_orders() == [leader_and_isr(h, b, changed) for b in (0, 1, 2)]


# ---------------------------------------------------------------------- controlled shutdown
def test_controlled_shutdown_stops_the_partitions_the_broker_now_only_follows() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("followed", assignments=[[1, 0, 2]])
    h.create_topic("led", assignments=[[0, 1, 2]])
    h.create_topic("single", assignments=[[0]])
    h.create_topic("stuck", assignments=[[0, 1]])
    h.alter_isr("stuck", 0, [0])
    h.take_orders()
    h.controlled_shutdown(0)
    followed, led = state_of(h, "followed"), state_of(h, "led")
    assert (led.leader, led.leader_epoch, followed.leader_epoch) == (1, 1, 0)
    assert h.take_orders() == [
        stop_replica(h, 0, stop(h, "followed", leader_epoch=0), stop(h, "led", leader_epoch=1)),
        leader_and_isr(h, 1, followed, led),
        leader_and_isr(h, 2, followed, led),
    ]


def test_controlled_shutdown_of_a_fenced_broker_sends_nothing() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[0, 1]])
    h.heartbeat(0, want_fence=True)
    h.take_orders()
    h.controlled_shutdown(0)
    assert h.take_orders() == []


# ---------------------------------------------------------------------- deletion
def test_delete_stops_every_replica_with_delete_and_epoch_minus_two() -> None:
    h = cluster(0, 1, 2, 3)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.alter_isr("t", 0, [0, 1])  # a replica outside the ISR is stopped too
    topic_id = h.topic_id("t")
    h.take_orders()
    h.send(DeleteTopicsRequest(topic_names=("t",)), 5)
    gone = StopPartition("t", topic_id, 0, -2, True)
    assert h.take_orders() == [stop_replica(h, b, gone) for b in (0, 1, 2)]


# ---------------------------------------------------------------------- fencing and unfencing
def test_fenced_brokers_get_nothing() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.take_orders()
    h.advance(5000)
    h.heartbeat(0)
    h.heartbeat(1)
    h.advance(5000)  # 2 is fenced: it is not told, the others are
    fenced = state_of(h, "t")
    assert fenced.isr == (0, 1)
    assert h.take_orders() == [leader_and_isr(h, 0, fenced), leader_and_isr(h, 1, fenced)]
    h.alter_isr("t", 0, [0])
    assert kinds(h.take_orders()) == [(0, "LeaderAndIsr"), (1, "LeaderAndIsr")]
    h.send(DeleteTopicsRequest(topic_names=("t",)), 5)
    assert kinds(h.take_orders()) == [(0, "StopReplica"), (1, "StopReplica")]


def test_newly_unfenced_broker_gets_a_full_leader_and_isr_of_what_it_hosts() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("a", assignments=[[0, 1, 2]])
    h.create_topic("b", assignments=[[1, 2]])
    h.create_topic("c", assignments=[[0, 1]])  # not hosted by 2
    h.take_orders()
    h.heartbeat(2, want_fence=True)
    assert h.take_orders() == [
        leader_and_isr(h, 0, state_of(h, "a")),
        leader_and_isr(h, 1, state_of(h, "a"), state_of(h, "b")),
    ]
    h.register(2, generation=1)  # a new incarnation: fenced, so it hears nothing yet
    assert h.take_orders() == []
    h.heartbeat(2)
    assert h.take_orders() == [leader_and_isr(h, 2, state_of(h, "a"), state_of(h, "b"), full=True)]


def test_unfencing_batch_sends_the_final_state_of_a_partition_it_is_elected_to_lead() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[1, 0]])
    h.alter_isr("t", 0, [1])
    h.heartbeat(1, want_fence=True)  # the last ISR member: t has no leader now
    assert (h.partition("t").leader, h.partition("t").isr) == (-1, (1,))
    h.take_orders()
    h.heartbeat(1)  # unfenced, and elected where its ISR holds it
    elected = state_of(h, "t")
    assert (elected.leader, elected.leader_epoch) == (1, 2)
    assert h.take_orders() == [leader_and_isr(h, 0, elected), leader_and_isr(h, 1, elected, full=True)]


def test_a_broker_without_listeners_gets_nothing() -> None:
    h = cluster(0, 1)
    h.send(dataclasses.replace(h.registration(2), listeners=()), 3)
    h.heartbeat(2)
    h.take_orders()
    h.create_topic("t", assignments=[[0, 1, 2]])
    assert kinds(h.take_orders()) == [(0, "LeaderAndIsr"), (1, "LeaderAndIsr")]


# ---------------------------------------------------------------------- a new controller's full state
def test_a_new_controllers_full_state_tells_each_live_broker_every_partition_it_hosts() -> None:
    h = cluster(0, 1, 2, 3)
    h.create_topic("b", assignments=[[1, 2], [2, 3]])
    h.create_topic("a", assignments=[[0, 1, 2]])
    h.heartbeat(3, want_fence=True)  # fenced: told nothing
    h.send(dataclasses.replace(h.registration(4), listeners=()), 3)  # no listener: told nothing
    h.heartbeat(4)
    h.take_orders()
    b0, b1, a0 = state_of(h, "b", 0), state_of(h, "b", 1), state_of(h, "a")
    orders = finish(full_state_orders(h.core.freeze()))
    assert orders == [
        leader_and_isr(h, 0, a0, full=True),
        leader_and_isr(h, 1, a0, b0, full=True),  # topics in name order
        leader_and_isr(h, 2, a0, b0, b1, full=True),
    ]
    assert orders[0].partitions[0] is orders[2].partitions[0]  # one state per partition, shared


def test_a_full_state_is_built_in_slices_from_the_state_frozen_when_it_began() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", partitions=FULL_STATE_SLICE_PARTITIONS * 2 + 1, replication_factor=1)
    h.take_orders()
    work = full_state_orders(h.core.freeze())
    assert next(work) is None and next(work) is None  # a slice per FULL_STATE_SLICE_PARTITIONS partitions
    h.send(DeleteTopicsRequest(topic_names=("t",)), 5)  # decided meanwhile: not in this full state
    orders = finish(work)
    assert sum(len(order.partitions) for order in orders) == FULL_STATE_SLICE_PARTITIONS * 2 + 1
