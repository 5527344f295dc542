"""One broker's data channel, controlled shutdown, log dirs and stale replays, without sockets."""

from __future__ import annotations

from broker_sim.model import stale
from broker_sim.model.broker import BrokerModel
from broker_sim.model.events import ProbeAnswered, ShutdownEnded, StaleAnswered
from broker_sim.model.leadership import ProbeTarget
from broker_sim.model.views import PartitionView
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.messages.alter_replica_state import (
    OFFLINE,
    ONLINE,
    AlterReplicaStateRequest,
    AlterReplicaStateResponse,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ControlledShutdownResponseRemainingPartition,
)
from protocol.spec import Data

from .helpers import TIMING, TOPIC, TOPIC_ID, FakeFollowers, register, take, view

Views = dict[tuple[str, int], PartitionView]


def broker(stale_replays: bool = False, broker_id: int = 1) -> tuple[BrokerModel, FakeFollowers]:
    followers = FakeFollowers()
    return BrokerModel(broker_id, 3, TIMING, followers, {TOPIC: TOPIC_ID}, stale_replays=stale_replays), followers


def views(*items: PartitionView) -> Views:
    return {(v.topic_name, v.partition): v for v in items}


def test_the_data_channel_waits_for_registration_and_then_decides_on_its_ticks() -> None:
    model, _ = broker()
    leader = views(view(isr=(1, 2)))
    model.start(0.0, "h", 1)
    assert model.next_data(0.0, leader, 1) == TIMING.tick_s  # not registered: nothing yet
    t = register(model)
    wake = model.next_data(t, leader, 1)
    if isinstance(wake, float):  # not yet at one of the broker's ticks: it names the next one
        assert t < wake <= t + TIMING.tick_s
        wake = model.next_data(wake, leader, 1)
    out = take(wake)
    assert isinstance(out.body, AlterPartitionRequest)
    assert out.body.broker_epoch == 100 and out.proposals[0].isr == (1, 2, 3)


def test_the_same_answers_give_the_same_requests() -> None:
    def run() -> list[object]:
        model, followers = broker()
        t = register(model)
        sent: list[object] = []
        leader = views(view(isr=(1, 2, 3)), view(partition=1, isr=(1, 3)))
        for step in range(40):
            followers.caught_up[3] = step % 9 < 5
            t += 0.37
            out = model.next_data(t, leader, 1)
            if not isinstance(out, float):
                sent.append(out.body)
                model.data_failed(out, t) if step % 7 == 0 else model.data_answered(out, AlterPartitionResponse(), t)
        return sent

    first = run()
    assert first and first == run()


def test_shutdown_by_rpc_retries_until_nothing_remains_then_ends_the_incarnation() -> None:
    model, _ = broker()
    t = register(model)
    model.begin_shutdown("rpc", t)
    out = take(model.next_data(t, {}, 1))
    assert isinstance(out.body, ControlledShutdownRequest) and out.body.broker_id == 1
    remaining = ControlledShutdownResponse(
        remaining_partitions=(ControlledShutdownResponseRemainingPartition(topic_name=TOPIC, partition_index=0),)
    )
    model.data_answered(out, remaining, t)
    assert model.next_data(t, {}, 1) == t + TIMING.shutdown_retry_s
    out = take(model.next_data(t + TIMING.shutdown_retry_s, {}, 1))
    model.data_answered(out, ControlledShutdownResponse(), t + 1)
    assert model.incarnation_over
    (ended,) = [e for e in model.events if isinstance(e, ShutdownEnded)]
    assert (ended.via, ended.started, ended.finished, ended.attempts) == ("rpc", t, t + 1, 2)


def test_shutdown_by_heartbeat_asks_with_want_shut_down_until_should_shut_down() -> None:
    model, _ = broker()
    t = register(model)
    model.begin_shutdown("heartbeat", t)
    out = take(model.next_lifecycle(t))
    assert isinstance(out.body, BrokerHeartbeatRequest) and out.body.want_shut_down
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_fenced=False, should_shut_down=False), t)
    out = take(model.next_lifecycle(t + TIMING.fenced_heartbeat_s))
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_fenced=True, should_shut_down=True), t + 0.3)
    assert model.incarnation_over
    assert [e.finished for e in model.events if isinstance(e, ShutdownEnded)] == [t + 0.3]


def test_rpc_then_heartbeat_sends_want_shut_down_once_the_rpc_is_done() -> None:
    model, _ = broker()
    t = register(model)
    model.begin_shutdown("rpc+heartbeat", t)
    model.data_answered(take(model.next_data(t, {}, 1)), ControlledShutdownResponse(), t)
    assert not model.incarnation_over
    out = take(model.next_lifecycle(t))
    assert isinstance(out.body, BrokerHeartbeatRequest) and out.body.want_shut_down


def test_a_shutdown_past_its_bound_is_given_up_unfinished() -> None:
    model, _ = broker()
    t = register(model)
    model.begin_shutdown("heartbeat", t)
    assert model.next_data(t + TIMING.shutdown_bound_s + 0.1, {}, 1) == float("inf")
    assert model.incarnation_over
    assert [e.finished for e in model.events if isinstance(e, ShutdownEnded)] == [None]


def test_a_shutdown_waits_for_another_eligible_isr_member_of_each_led_partition() -> None:
    model, followers = broker()
    t = register(model)
    model.next_data(t, views(view(isr=(1, 2))), 1)
    followers.eligible[2] = False
    assert not model.ready_to_shut_down(t)
    followers.eligible[2] = True
    assert model.ready_to_shut_down(t)
    assert not model.ready_to_shut_down(t, excluded=frozenset({2}))


def test_a_failed_log_dir_reports_its_replicas_offline_and_online_after_repair() -> None:
    model, _ = broker()
    t = register(model)
    hosted = views(*(view(leader=2, partition=p) for p in range(8)))
    model.next_data(t, hosted, 1)
    model.fail_dir(0)
    out = take(model.next_data(t, hosted, 1))
    assert isinstance(out.body, AlterReplicaStateRequest) and out.body.new_state == OFFLINE
    offline = {p for topic in out.body.topics for p in topic.partitions}
    assert offline and offline < set(range(8))
    assert not model.caught_up(TOPIC, min(offline), t, lagging=False)
    model.data_answered(out, AlterReplicaStateResponse(), t)
    model.repair_dir(0, t + 3)
    out = take(model.next_data(t + 3, hosted, 1))
    assert isinstance(out.body, AlterReplicaStateRequest)
    assert out.body.new_state == ONLINE and {p for tp in out.body.topics for p in tp.partitions} == offline
    assert not model.caught_up(TOPIC, min(offline), t + 3, lagging=False)  # catching up
    assert model.caught_up(TOPIC, min(offline), t + 3 + TIMING.catch_up_s, lagging=False)


def test_an_ending_incarnation_plans_one_replay_of_each_kind_sent_once_the_new_one_has_its_epoch() -> None:
    model, _ = broker(stale_replays=True, broker_id=2)
    t = register(model, epoch=100)
    model.next_data(t, views(view(leader=2, isr=(2, 3), replicas=(2, 3))), 1)
    model.end_incarnation(t)
    kinds = {plan.api_key: plan for plan in model.replays.plans}
    expected = {56: AlterPartitionRequest, 1000: AlterReplicaStateRequest, 63: BrokerHeartbeatRequest}
    if model.lifecycle.versions[7] >= 2:  # v0-1 carry no broker epoch: not a stale request
        expected[7] = ControlledShutdownRequest
    assert {key: type(plan.body) for key, plan in kinds.items()} == expected
    assert {(plan.reason, plan.stale_broker_epoch, plan.body.broker_epoch) for plan in kinds.values()} == {
        (stale.PREVIOUS_INCARNATION, 100, 100)
    }
    model.start(t, "h", 1)
    assert model.next_data(t, {}, 1) == t + TIMING.tick_s  # not registered yet: nothing sent
    t = register(model, epoch=500)
    answers: dict[int, Data] = {
        56: AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH),
        7: ControlledShutdownResponse(error_code=ErrorCode.STALE_BROKER_EPOCH),
        1000: AlterReplicaStateResponse(error_code=ErrorCode.STALE_BROKER_EPOCH),
        63: BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH),
    }
    sent = []
    for _ in kinds:
        out = take(model.next_data(t, {}, 2))
        assert out.stale is not None and out.body is out.stale.body
        sent.append(out.stale.api_key)
        model.data_answered(out, answers[out.stale.api_key], t)
    assert sorted(sent) == sorted(kinds) and not model.replays.plans
    answered = [e for e in model.events if isinstance(e, StaleAnswered)]
    assert {(a.errors, a.accepted, a.current_broker_epoch) for a in answered} == {((77,), False, 500)}


def test_judging_a_replay_accepts_only_a_none_that_would_change_state() -> None:
    applied = AlterPartitionResponse(
        topics=(AlterPartitionResponseTopicData(partitions=(AlterPartitionResponsePartitionData(partition_index=0),)),)
    )
    fenced = AlterPartitionResponse(
        topics=(
            AlterPartitionResponseTopicData(
                partitions=(AlterPartitionResponsePartitionData(partition_index=0, error_code=74),)
            ),
        )
    )
    assert stale.judge(applied) == ([0, 0], True)
    assert stale.judge(fenced) == ([0, 74], False)
    assert stale.judge(ControlledShutdownResponse()) == ([0], True)
    assert stale.judge(ControlledShutdownResponse(error_code=77)) == ([77], False)
    assert stale.judge(BrokerHeartbeatResponse()) == ([0], True)
    assert stale.judge(BrokerHeartbeatResponse(error_code=77)) == ([77], False)


def test_in_chaos_a_leader_probes_a_follower_the_controller_must_refuse_and_goes_back_on_ineligible() -> None:
    model, followers = broker(stale_replays=True, broker_id=1)
    t = register(model)
    hosted = views(view(leader=1, isr=(1, 2), replicas=(1, 2, 3)))
    followers.caught_up[3] = False  # the normal decision adds no one
    followers.epochs[2] = 200
    followers.ineligibles[3] = ProbeTarget(3, 300, "previous-epoch")
    version = model.lifecycle.versions[56]
    probes = []
    for step in range(40):  # the probe is drawn with a seeded chance: ask until one goes out
        out = model.next_data(t + step * 0.5, hosted, 1)
        if not isinstance(out, float) and out.probe is not None:
            probes.append(out)
            break
        if not isinstance(out, float):
            model.data_answered(out, AlterPartitionResponse(), t + step * 0.5)
    if version < 3:  # a previous epoch cannot be named before v3: no probe
        assert probes == []
        return
    (out,) = probes
    assert out.probe == ProbeTarget(3, 300, "previous-epoch")
    (proposal,) = out.proposals
    assert (proposal.isr, proposal.member_epochs) == ((1, 2, 3), (100, 200, 300))
    refused = AlterPartitionResponse(
        topics=(
            AlterPartitionResponseTopicData(
                topic_id=TOPIC_ID,
                partitions=(AlterPartitionResponsePartitionData(partition_index=0, error_code=107),),
            ),
        )
    )
    model.data_answered(out, refused, t)
    (answered,) = [e for e in model.events if isinstance(e, ProbeAnswered)]
    assert answered.errors == (0, 107) and answered.target.why == "previous-epoch"
    led = model.leadership.led[(TOPIC, 0)]
    assert led.isr == (1, 2) and not led.in_flight and led.retry_at > t  # back to the committed state
