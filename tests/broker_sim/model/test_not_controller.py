"""NOT_CONTROLLER (41) is a retriable answer everywhere in a broker's model: another controller of a
quorum answered, the shell has moved on to the next one, and the request goes again after the usual
backoff. Nothing so answered is journalled as decided (no registration, acknowledgement or replay)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from broker_sim.model.answers import answer_label, nested_errors, not_controller
from broker_sim.model.broker import BrokerModel
from broker_sim.model.events import Outgoing, PartitionAcked, Registered, ShutdownEnded, StaleAnswered
from broker_sim.model.lifecycle import Phase
from broker_sim.model.views import PartitionView
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.messages.alter_replica_state import (
    AlterReplicaStateRequest,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.messages.create_topics import CreateTopicsResponse, CreateTopicsResponseCreatableTopicResult
from protocol.messages.delete_topics import DeleteTopicsResponse, DeleteTopicsResponseDeletableTopicResult
from protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.messages.elect_leaders import (
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.spec import Data

from .helpers import TIMING, TOPIC, TOPIC_ID, FakeFollowers, controller_versions, register, take, view

NOT_CONTROLLER = ErrorCode.NOT_CONTROLLER


def broker(stale_replays: bool = False, broker_id: int = 1) -> BrokerModel:
    return BrokerModel(broker_id, 3, TIMING, FakeFollowers(), {TOPIC: TOPIC_ID}, stale_replays=stale_replays)


def views(*items: PartitionView) -> dict[tuple[str, int], PartitionView]:
    return {(v.topic_name, v.partition): v for v in items}


def alter_partition_answer(error: int = 0, *, top: int = 0, partition_epoch: int = 1) -> AlterPartitionResponse:
    """One partition of TOPIC, named both ways (the model reads the name or the id by version)."""
    partition = AlterPartitionResponsePartitionData(
        partition_index=0,
        error_code=error,
        leader_id=1,
        leader_epoch=0,
        isr=(1, 2, 3),
        partition_epoch=partition_epoch,
    )
    topic = AlterPartitionResponseTopicData(topic_name=TOPIC, topic_id=TOPIC_ID, partitions=(partition,))
    return AlterPartitionResponse(error_code=top, topics=(topic,))


NOT_CONTROLLER_ANSWERS: list[tuple[str, Data]] = [
    ("BrokerRegistration", BrokerRegistrationResponse(error_code=NOT_CONTROLLER)),
    ("BrokerHeartbeat", BrokerHeartbeatResponse(error_code=NOT_CONTROLLER)),
    ("DescribeCluster", DescribeClusterResponse(error_code=NOT_CONTROLLER)),
    ("ControlledShutdown", ControlledShutdownResponse(error_code=NOT_CONTROLLER)),
    ("AlterPartition top level", alter_partition_answer(top=NOT_CONTROLLER)),
    ("AlterPartition partition", alter_partition_answer(NOT_CONTROLLER)),
    ("AlterReplicaState top level", AlterReplicaStateResponse(error_code=NOT_CONTROLLER)),
    (
        "AlterReplicaState partition",
        AlterReplicaStateResponse(
            topics=(
                AlterReplicaStateResponseTopicResult(
                    partitions=(AlterReplicaStateResponsePartitionResult(partition_index=0, error_code=NOT_CONTROLLER),)
                ),
            )
        ),
    ),
    (
        "CreateTopics topic",
        CreateTopicsResponse(topics=(CreateTopicsResponseCreatableTopicResult(name="a", error_code=NOT_CONTROLLER),)),
    ),
    (
        "DeleteTopics topic",
        DeleteTopicsResponse(
            responses=(DeleteTopicsResponseDeletableTopicResult(name="a", error_code=NOT_CONTROLLER),)
        ),
    ),
    ("ElectLeaders top level", ElectLeadersResponse(error_code=NOT_CONTROLLER)),
    (
        "ElectLeaders partition",
        ElectLeadersResponse(
            replica_election_results=(
                ElectLeadersResponseReplicaElectionResult(
                    topic="a",
                    partition_result=(ElectLeadersResponsePartitionResult(partition_id=0, error_code=NOT_CONTROLLER),),
                ),
            )
        ),
    ),
]


@pytest.mark.parametrize(("name", "answer"), NOT_CONTROLLER_ANSWERS, ids=[name for name, _ in NOT_CONTROLLER_ANSWERS])
def test_not_controller_is_read_wherever_the_answer_puts_it(name: str, answer: Data) -> None:
    assert not_controller(answer), name


def test_other_answers_are_not_read_as_not_controller() -> None:
    assert not not_controller(alter_partition_answer(ErrorCode.FENCED_LEADER_EPOCH))
    assert not not_controller(BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    assert not not_controller(DescribeClusterResponse(cluster_id="c"))
    assert nested_errors(alter_partition_answer(ErrorCode.FENCED_LEADER_EPOCH)) == [ErrorCode.FENCED_LEADER_EPOCH]


def test_describe_cluster_and_registration_answered_not_controller_go_again_after_the_backoff() -> None:
    model = broker()
    model.start(0.0, "127.0.0.1", 4000)
    out = take(model.next_lifecycle(0.0))
    assert isinstance(out.body, DescribeClusterRequest)
    model.lifecycle_answered(out, DescribeClusterResponse(error_code=NOT_CONTROLLER), 0.0)
    assert model.next_lifecycle(0.0) == TIMING.backoff(1)
    out = take(model.next_lifecycle(TIMING.backoff(1)))
    assert isinstance(out.body, DescribeClusterRequest)
    model.lifecycle_answered(out, DescribeClusterResponse(cluster_id="c1"), 1.0)
    model.lifecycle_answered(take(model.next_lifecycle(1.0)), controller_versions(), 1.0)
    first = take(model.next_lifecycle(1.0))
    assert isinstance(first.body, BrokerRegistrationRequest)
    model.lifecycle_answered(first, BrokerRegistrationResponse(error_code=NOT_CONTROLLER), 1.0)
    assert model.lifecycle.phase == Phase.REGISTERING and model.events == []
    assert model.next_lifecycle(1.0) == 1.0 + TIMING.backoff(1)
    again = take(model.next_lifecycle(1.0 + TIMING.backoff(1)))
    assert again.body == first.body  # the same incarnation, the same registration
    model.lifecycle_answered(again, BrokerRegistrationResponse(broker_epoch=42), 2.0)
    assert model.events == [Registered(first.body.incarnation_id, 42, first.body.log_dirs)]


def test_heartbeats_answered_not_controller_go_on_and_the_broker_stays_active() -> None:
    model = broker()
    t = register(model)
    for _ in range(3):
        due = model.next_lifecycle(t)
        assert isinstance(due, float)
        t = due
        out = take(model.next_lifecycle(t))
        assert isinstance(out.body, BrokerHeartbeatRequest) and out.body.broker_epoch == 100
        model.lifecycle_answered(out, BrokerHeartbeatResponse(error_code=NOT_CONTROLLER), t)
        wake = model.next_lifecycle(t)
        assert isinstance(wake, float) and t < wake <= t + TIMING.heartbeat_s / 2
    assert model.lifecycle.phase == Phase.ACTIVE and model.events == []
    out = take(model.next_lifecycle(wake))
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), wake)
    assert model.lifecycle.phase == Phase.ACTIVE and model.lifecycle.failures == 0


@pytest.mark.parametrize("where", ["top level", "partition"])
def test_an_isr_change_answered_not_controller_goes_again_with_the_same_epochs(where: str) -> None:
    model = broker()
    t = register(model)
    leader = views(view(isr=(1, 2), leader_epoch=0, partition_epoch=0))
    out = model.next_data(t, leader, 1)
    while isinstance(out, float):
        t = out
        out = model.next_data(t, leader, 1)
    assert isinstance(out.body, AlterPartitionRequest)
    answer = alter_partition_answer(top=NOT_CONTROLLER) if where == "top level" else alter_partition_answer(41)
    model.data_answered(out, answer, t)
    assert not [e for e in model.events if isinstance(e, PartitionAcked)]
    led = model.leadership.led[(TOPIC, 0)]
    assert not led.in_flight and led.retry_at == t + TIMING.backoff(1)
    again = model.next_data(led.retry_at, leader, 1)
    while isinstance(again, float):
        again = model.next_data(again, leader, 1)
    assert [(p.leader_epoch, p.partition_epoch, p.isr) for p in again.proposals] == [
        (p.leader_epoch, p.partition_epoch, p.isr) for p in out.proposals
    ]
    # the next controller answers with a newer partition epoch than the request's + 1: taken as it is
    model.data_answered(again, alter_partition_answer(partition_epoch=3), led.retry_at)
    (acked,) = [e for e in model.events if isinstance(e, PartitionAcked)]
    assert acked.partition_epoch == 3 and led.partition_epoch == 3 and led.isr == (1, 2, 3)


def test_controlled_shutdown_answered_not_controller_is_asked_again() -> None:
    model = broker()
    t = register(model)
    model.begin_shutdown("rpc", t)
    out = take(model.next_data(t, {}, 1))
    assert isinstance(out.body, ControlledShutdownRequest)
    model.data_answered(out, ControlledShutdownResponse(error_code=NOT_CONTROLLER), t)
    assert not model.incarnation_over
    assert model.next_data(t, {}, 1) == t + TIMING.shutdown_retry_s
    out = take(model.next_data(t + TIMING.shutdown_retry_s, {}, 1))
    model.data_answered(out, ControlledShutdownResponse(), t + 1)
    assert model.incarnation_over
    assert [(e.finished, e.attempts) for e in model.events if isinstance(e, ShutdownEnded)] == [(t + 1, 2)]


def test_a_replica_state_report_answered_not_controller_is_sent_again() -> None:
    model = broker()
    t = register(model)
    hosted = views(*(view(leader=2, partition=p) for p in range(8)))
    model.next_data(t, hosted, 1)
    model.fail_dir(0)
    out = take(model.next_data(t, hosted, 1))
    assert isinstance(out.body, AlterReplicaStateRequest)
    model.data_answered(out, AlterReplicaStateResponse(error_code=NOT_CONTROLLER), t)
    assert model.disks.pending
    retry_at = model.disks.retry_at
    assert retry_at > t
    again = take(model.next_data(retry_at, hosted, 1))
    assert again.body == out.body


def test_a_stale_replay_answered_not_controller_is_not_judged_and_goes_again() -> None:
    model = broker(stale_replays=True, broker_id=2)
    t = register(model, epoch=100)
    model.next_data(t, views(view(leader=2, isr=(2, 3), replicas=(2, 3))), 1)
    model.end_incarnation(t)
    planned = len(model.replays.plans)
    t = register(model, epoch=500)
    out = take(model.next_data(t, {}, 2))
    assert out.stale is not None
    top_level = type(out.body).__name__.replace("Request", "Response")
    answers: dict[str, Data] = {
        "AlterPartitionResponse": AlterPartitionResponse(error_code=NOT_CONTROLLER),
        "ControlledShutdownResponse": ControlledShutdownResponse(error_code=NOT_CONTROLLER),
        "AlterReplicaStateResponse": AlterReplicaStateResponse(error_code=NOT_CONTROLLER),
        "BrokerHeartbeatResponse": BrokerHeartbeatResponse(error_code=NOT_CONTROLLER),
    }
    model.data_answered(out, answers[top_level], t)
    assert [e for e in model.events if isinstance(e, StaleAnswered)] == []
    assert len(model.replays.plans) == planned and model.replays.plans[0] is out.stale  # first in line again
    wake: Outgoing | float = t
    while isinstance(wake, float) and wake < t + TIMING.backoff(1):  # nothing before the backoff
        wake = model.next_data(wake, {}, 3)
    assert wake == t + TIMING.backoff(1)  # it wakes for it
    again = take(model.next_data(t + TIMING.backoff(1), {}, 3))
    assert again.stale is out.stale
    model.data_answered(again, replace(answers[top_level], error_code=ErrorCode.STALE_BROKER_EPOCH), t + 1)
    (answered,) = [e for e in model.events if isinstance(e, StaleAnswered)]
    assert (answered.errors[0], answered.accepted) == (ErrorCode.STALE_BROKER_EPOCH, False)
    assert model.replays.not_judged == 0


def test_a_probes_answer_is_counted_by_its_first_error_or_as_no_answer() -> None:
    assert answer_label([]) == "no answer"
    assert answer_label([0, 0, 42]) == "INVALID_REQUEST"
    assert answer_label([77, 42]) == "STALE_BROKER_EPOCH"
    assert answer_label([0]) == "NONE"
