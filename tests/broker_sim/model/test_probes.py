"""Request probes: each kind built from what a broker knows, judged from its answer,
paced, and sent by the broker model in chaos."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

import pytest

from broker_sim.model import probes
from broker_sim.model.broker import BrokerModel
from broker_sim.model.disks import dir_of
from broker_sim.model.events import DATA, Outgoing, RequestProbeAnswered
from broker_sim.model.leadership import RECOVERING, Led
from broker_sim.model.probe_kinds import PROBE_KINDS
from broker_sim.model.probes import Knowledge, ProbePlan, RequestProbes
from broker_sim.model.views import PartitionView
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.ids import BrokerEpoch
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
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.spec import ZERO_UUID, Data

from .helpers import TIMING, TOPIC, TOPIC_ID, FakeFollowers, register, view

ME = 2
VERSIONS: dict[int, int] = {
    ApiKey.ALTER_PARTITION: 3,
    ApiKey.BROKER_HEARTBEAT: 1,
    ApiKey.CONTROLLED_SHUTDOWN: 3,
    ApiKey.BROKER_REGISTRATION: 3,
    ApiKey.ALTER_REPLICA_STATE: 1,
}


def led(partition: int = 1, isr: tuple[int, ...] = (2, 3), recovery: int = 0, **fields: object) -> Led:
    values: dict[str, object] = {
        "topic": TOPIC,
        "topic_id": TOPIC_ID,
        "partition": partition,
        "replicas": (2, 3, 1),
        "leader_epoch": 4,
        "partition_epoch": 9,
        "isr": isr,
        "recovery_state": recovery,
    }
    values.update(fields)
    return Led(**values)  # type: ignore[arg-type]


def knowledge(
    *,
    versions: dict[int, int] | None = None,
    leads: tuple[Led, ...] = (),
    hosted: tuple[PartitionView, ...] = (),
    ids: dict[str, uuid.UUID] | None = None,
    heard_at: float | None = 9.5,
    states: dict[tuple[str, int], int] | None = None,
) -> Knowledge:
    """A broker at t = 10 s, heard 0.5 s ago (session 3 s), every hosted replica ONLINE unless `states`."""
    known_ids = ids if ids is not None else {TOPIC: TOPIC_ID}
    return Knowledge(
        broker_id=ME,
        broker_epoch=40,
        versions=VERSIONS if versions is None else versions,
        cluster_id="cluster-1",
        led={(item.topic, item.partition): item for item in leads},
        hosted=hosted,
        topic_id=lambda name, topic_id: topic_id if topic_id != ZERO_UUID else known_ids.get(name, ZERO_UUID),
        now=10.0,
        heard_at=heard_at,
        session_timeout_s=3.0,
        replica_states={(v.topic_name, v.partition): ONLINE for v in hosted} if states is None else states,
    )


FOLLOWED = view(leader=1, leader_epoch=6, partition_epoch=11, isr=(1, 2, 3), replicas=(1, 2, 3), partition=0)
LED_VIEW = view(leader=2, leader_epoch=4, partition_epoch=9, isr=(2, 3), replicas=(2, 3, 1), partition=1)
STRANGER_VIEW = view(leader=5, isr=(5, 2), replicas=(5, 2, 7), partition=2)


def built(kind: str, known: Knowledge, seed: int = 1) -> ProbePlan:
    plan = probes.build(kind, random.Random(seed), known)
    assert plan is not None, kind
    assert plan.probe == kind and plan.broker_epoch == 40
    return plan


def alter(plan: ProbePlan) -> tuple[AlterPartitionRequest, list[int], int, int, int]:
    """(the request, its one partition's ISR, leader epoch, partition epoch, recovery state)."""
    body = plan.body
    assert isinstance(body, AlterPartitionRequest) and plan.api_key == ApiKey.ALTER_PARTITION
    assert (body.broker_id, body.broker_epoch) == (ME, 40)
    [topic] = body.topics
    [part] = topic.partitions
    isr = [int(m.broker_id) for m in part.new_isr_with_epochs] if plan.version >= 3 else list(map(int, part.new_isr))
    return body, isr, int(part.leader_epoch), int(part.partition_epoch), part.leader_recovery_state


@pytest.mark.parametrize("seed", range(6))
def test_a_follower_asks_on_the_epochs_its_listener_shows_with_the_leader_kept(seed: int) -> None:
    plan = built(probes.FOLLOWER, knowledge(leads=(led(),), hosted=(FOLLOWED, LED_VIEW)), seed)
    body, isr, leader_epoch, partition_epoch, _ = alter(plan)
    assert body.topics[0].topic_id == TOPIC_ID and body.topics[0].partitions[0].partition_index == 0
    assert (leader_epoch, partition_epoch) == (6, 11)
    assert isr in ([1, 2, 3], [1, 3])  # as it is, or without the follower itself
    assert plan.detail["leader"] == 1


def test_a_follower_probe_needs_a_partition_led_by_another_broker() -> None:
    leaderless = replace(FOLLOWED, leader=-1)
    assert probes.build(probes.FOLLOWER, random.Random(1), knowledge(hosted=(LED_VIEW, leaderless))) is None


def test_the_leaders_isr_probes_break_row_f_on_its_committed_epochs() -> None:
    known = knowledge(leads=(led(),), hosted=(FOLLOWED, LED_VIEW, STRANGER_VIEW))
    for kind in (probes.NON_REPLICA, probes.DUPLICATE, probes.NEGATIVE_ID, probes.WITHOUT_LEADER):
        _, isr, leader_epoch, partition_epoch, recovery = alter(built(kind, known))
        assert (leader_epoch, partition_epoch, recovery) == (4, 9, 0)
        if kind == probes.NON_REPLICA:
            assert isr[:2] == [2, 3] and isr[2] in (5, 7)  # another partition's replicas
        elif kind == probes.DUPLICATE:
            assert len(isr) == 3 and len(set(isr)) == 2
        elif kind == probes.NEGATIVE_ID:
            assert isr[:2] == [2, 3] and isr[2] < 0
        else:
            assert isr == [3]


def test_a_non_replica_is_an_id_past_the_partitions_when_the_broker_knows_no_other() -> None:
    _, isr, *_ = alter(built(probes.NON_REPLICA, knowledge(leads=(led(),), hosted=(LED_VIEW,))))
    assert isr == [2, 3, 4]


def test_a_partition_named_twice_changes_nothing_the_first_time() -> None:
    plan = built(probes.PARTITION_TWICE, knowledge(leads=(led(),)))
    body = plan.body
    assert isinstance(body, AlterPartitionRequest)
    [topic] = body.topics
    first, second = topic.partitions
    assert first == second and first.partition_index == 1 and plan.detail["times_named"] == 2
    assert ([m.broker_id for m in first.new_isr_with_epochs], first.leader_epoch, first.partition_epoch) == (
        [2, 3],
        4,
        9,
    )
    # the first naming's NONE changes nothing: only the second's is an acceptance
    assert probes.judge(partition_answer(0, 42), probes.PARTITION_TWICE) == ([0, 0, 42], False)
    assert probes.judge(partition_answer(0, 0), probes.PARTITION_TWICE) == ([0, 0, 0], True)
    assert probes.judge(partition_answer(0, 42)) == ([0, 0, 42], True)


def test_one_partition_twice_probe_in_three_names_it_more_times_than_a_small_record_cap() -> None:
    namings = []
    for seed in range(30):
        plan = built(probes.PARTITION_TWICE, knowledge(leads=(led(),)), seed)
        body = plan.body
        assert isinstance(body, AlterPartitionRequest)
        [topic] = body.topics
        assert len(set(topic.partitions)) == 1 and plan.detail["times_named"] == len(topic.partitions)
        namings.append(len(topic.partitions))
    assert set(namings) == {2, probes.MANY_NAMINGS} and 5 <= namings.count(probes.MANY_NAMINGS) <= 15


def test_a_busy_leadership_is_not_probed() -> None:
    busy = led(in_flight=True)
    waiting = led(partition=2, waiting_since=1.0)
    assert probes.build(probes.DUPLICATE, random.Random(1), knowledge(leads=(busy, waiting))) is None


def test_the_recovery_state_probes_break_row_g_from_v1_only() -> None:
    known = knowledge(leads=(led(),))
    _, isr, _, _, recovery = alter(built(probes.RECOVERY_ROLLBACK, known))
    assert (isr, recovery) == ([ME], RECOVERING)
    _, isr, _, _, recovery = alter(built(probes.RECOVERING_ISR, known))
    assert (isr, recovery) == ([2, 3], RECOVERING)
    _, isr, _, _, recovery = alter(built(probes.RECOVERY_BYTE, known))
    assert isr == [2, 3] and recovery not in (0, 1)
    # a RECOVERING partition cannot roll back; v0 has no recovery state
    assert probes.build(probes.RECOVERY_ROLLBACK, random.Random(1), knowledge(leads=(led(recovery=1),))) is None
    v0 = knowledge(versions={**VERSIONS, ApiKey.ALTER_PARTITION: 0}, leads=(led(),))
    assert probes.build(probes.RECOVERY_BYTE, random.Random(1), v0) is None


def test_a_recovered_state_the_controller_never_said_is_not_rolled_back() -> None:
    # a LeaderAndIsr before v6 says no recovery state: the partition may be RECOVERING (an unclean
    # election), where RECOVERING with the leader alone is a change the controller accepts
    unsaid = knowledge(leads=(led(recovery_known=False),))
    assert probes.build(probes.RECOVERY_ROLLBACK, random.Random(1), unsaid) is None
    assert probes.build(probes.RECOVERING_ISR, random.Random(1), unsaid) is not None


@pytest.mark.parametrize("version", range(4))
def test_an_unknown_topic_is_named_by_id_from_v2_and_by_name_before(version: int) -> None:
    known = knowledge(versions={**VERSIONS, ApiKey.ALTER_PARTITION: version})
    body, *_ = alter(built(probes.UNKNOWN_TOPIC, known))
    [topic] = body.topics
    if version >= 2:
        assert topic.topic_id not in (ZERO_UUID, TOPIC_ID)
    else:
        assert topic.topic_name.startswith("fencer-probe-no-such-topic-")


def test_an_unknown_partition_names_a_hosted_topic_past_its_partitions() -> None:
    body, *_ = alter(built(probes.UNKNOWN_PARTITION_KIND, knowledge(hosted=(FOLLOWED,))))
    assert body.topics[0].topic_id == TOPIC_ID
    assert body.topics[0].partitions[0].partition_index >= probes.UNKNOWN_PARTITION


def test_a_v2_alter_partition_probe_waits_for_the_topic_id() -> None:
    unnamed = replace(FOLLOWED, topic_id=ZERO_UUID)
    assert probes.build(probes.FOLLOWER, random.Random(1), knowledge(hosted=(unnamed,), ids={})) is None
    v1 = knowledge(versions={**VERSIONS, ApiKey.ALTER_PARTITION: 1}, hosted=(unnamed,), ids={})
    assert probes.build(probes.FOLLOWER, random.Random(1), v1) is not None


@pytest.mark.parametrize("seed", range(8))
def test_the_broker_probes_name_an_unregistered_broker_or_a_wrong_cluster(seed: int) -> None:
    known = knowledge(hosted=(FOLLOWED,))
    heartbeat = built(probes.HEARTBEAT_UNREGISTERED, known, seed).body
    assert isinstance(heartbeat, BrokerHeartbeatRequest)
    assert heartbeat.broker_id < 0 or heartbeat.broker_id >= probes.UNREGISTERED_BASE
    shutdown = built(probes.SHUTDOWN_UNREGISTERED, known, seed).body
    assert isinstance(shutdown, ControlledShutdownRequest)
    assert shutdown.broker_id < 0 or shutdown.broker_id >= probes.UNREGISTERED_BASE
    registration = built(probes.REGISTRATION_CLUSTER_ID, known, seed).body
    assert isinstance(registration, BrokerRegistrationRequest)
    assert registration.cluster_id != "cluster-1" and registration.broker_id >= probes.UNREGISTERED_BASE
    negative = built(probes.REGISTRATION_NEGATIVE_ID, known, seed).body
    assert isinstance(negative, BrokerRegistrationRequest)
    assert negative.cluster_id == "cluster-1" and negative.broker_id < 0
    state = built(probes.REPLICA_STATE_UNKNOWN_STATE, known, seed).body
    assert isinstance(state, AlterReplicaStateRequest)
    assert state.new_state not in (1, 2) and (state.broker_id, state.broker_epoch) == (ME, 40)
    assert state.topics[0].topic_id == TOPIC_ID
    unknown = built(probes.REPLICA_STATE_UNKNOWN_TOPIC, known, seed).body
    assert isinstance(unknown, AlterReplicaStateRequest)
    assert unknown.new_state == 1 and unknown.topics[0].topic_id not in (ZERO_UUID, TOPIC_ID)
    for kind in (probes.ALTER_PARTITION_UNREGISTERED, probes.REPLICA_STATE_UNREGISTERED):
        claimed = built(kind, known, seed).body
        assert isinstance(claimed, AlterPartitionRequest | AlterReplicaStateRequest)
        assert claimed.broker_id < 0 or claimed.broker_id >= probes.UNREGISTERED_BASE
        assert claimed.topics[0].topic_id == TOPIC_ID and claimed.topics[0].partitions
    past = built(probes.REPLICA_STATE_UNKNOWN_PARTITION, known, seed).body
    assert isinstance(past, AlterReplicaStateRequest)
    assert past.new_state == 1 and past.topics[0].topic_id == TOPIC_ID
    assert past.topics[0].partitions[0] >= probes.UNKNOWN_PARTITION


def test_every_kind_has_a_builder_and_a_fleet_of_brokers_builds_every_kind() -> None:
    known = knowledge(leads=(led(),), hosted=(FOLLOWED, LED_VIEW, STRANGER_VIEW))
    assert {plan.probe for kind in probes.KINDS if (plan := probes.build(kind, random.Random(3), known))} == set(
        probes.KINDS
    )


def partition_answer(*codes: int, top: int = 0) -> AlterPartitionResponse:
    parts = tuple(AlterPartitionResponsePartitionData(partition_index=0, error_code=code) for code in codes)
    return AlterPartitionResponse(error_code=top, topics=(AlterPartitionResponseTopicData(partitions=parts),))


def test_judging_an_answer_accepts_only_a_none_where_it_decides() -> None:
    assert probes.judge(partition_answer(42)) == ([0, 42], False)
    assert probes.judge(partition_answer(0)) == ([0, 0], True)
    assert probes.judge(partition_answer(top=77)) == ([77], False)
    assert probes.judge(BrokerHeartbeatResponse(error_code=77)) == ([77], False)
    assert probes.judge(BrokerHeartbeatResponse()) == ([0], True)
    assert probes.judge(ControlledShutdownResponse(error_code=8)) == ([8], False)
    assert probes.judge(BrokerRegistrationResponse(error_code=104)) == ([104], False)
    assert probes.judge(BrokerRegistrationResponse(broker_epoch=BrokerEpoch(7))) == ([0], True)
    assert probes.judge(AlterReplicaStateResponse(error_code=1000)) == ([1000], False)


def test_pacing_cycles_through_every_kind_one_gap_apart_skipping_what_it_cannot_build() -> None:
    paced = RequestProbes(True, 1, ME, gap_s=2.0)
    known = knowledge(leads=(led(),), hosted=(FOLLOWED, LED_VIEW))
    sent = []
    t = 0.0
    for _ in range(len(probes.KINDS)):
        assert paced.due(t)
        plan = paced.take(t, known)
        assert plan is not None
        sent.append(plan.probe)
        assert not paced.due(t + 1.9) and paced.due(t + 2.0)
        t += 2.0
    assert set(sent) == set(probes.KINDS)
    nothing_known = knowledge(versions={ApiKey.BROKER_HEARTBEAT: 0})
    only = {paced.take(t, nothing_known).probe for _ in range(5)}  # type: ignore[union-attr]
    assert only == {probes.HEARTBEAT_UNREGISTERED}
    assert not RequestProbes(False, 1, ME).due(10.0)


def test_a_probe_answered_not_controller_goes_again_until_the_incarnation_ends_or_too_often() -> None:
    paced = RequestProbes(True, 1, ME)
    plan = paced.take(0.0, knowledge(hosted=(FOLLOWED,)))
    assert plan is not None
    paced.again(plan, 0.5)
    assert not paced.due(0.4) and paced.take(0.5, knowledge()) is plan
    paced.again(plan, 1.0)
    paced.new_incarnation()
    assert paced.take(1.0, knowledge()) is not plan
    for _ in range(probes.MAX_NOT_JUDGED):
        paced.again(plan, 2.0)
    assert paced.pending is None


def test_a_large_fleet_probes_each_broker_less_often() -> None:
    assert probes.gap_for(5) == probes.PROBE_GAP_S
    assert probes.gap_for(1000) == 1000 / probes.PROBES_PER_S


# ------------------------------------------------------------------ in the broker model
def chaos_broker() -> tuple[BrokerModel, float]:
    model = BrokerModel(ME, 1, TIMING, FakeFollowers(), {TOPIC: TOPIC_ID}, stale_replays=True)
    t = register(model)
    return model, t


def next_probe(model: BrokerModel, t: float) -> tuple[float, ProbePlan]:
    views = {(TOPIC, 0): FOLLOWED}
    for _ in range(40):
        out = model.next_data(t, views, 1)
        if not isinstance(out, float) and out.request_probe is not None:
            return t, out.request_probe
        if not isinstance(out, float):
            model.data_failed(out, t)
            model.events.clear()
        t += 0.25
    raise AssertionError("no request probe")


def test_in_chaos_a_broker_sends_request_probes_and_records_their_answers() -> None:
    model, t = chaos_broker()
    t, plan = next_probe(model, t)
    model.data_answered(_outgoing(plan), _answer(plan, refused=True), t)
    events = [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    assert len(events) == 1 and events[0].plan is plan and not events[0].accepted and events[0].errors
    assert events == model.events  # nothing else: a probe's answer is not the leader's, nor a replay's
    model.events.clear()
    t, plan = next_probe(model, t)
    model.data_failed(_outgoing(plan), t)
    assert [(e.plan, e.errors) for e in model.events if isinstance(e, RequestProbeAnswered)] == [(plan, ())]


def test_a_probe_answered_not_controller_is_not_recorded_and_goes_again() -> None:
    model, t = chaos_broker()
    t, plan = next_probe(model, t)
    model.data_answered(_outgoing(plan), _answer(plan, refused=False), t)
    assert not [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    t, again = next_probe(model, t)
    assert again is plan


def test_no_request_probes_outside_chaos() -> None:
    model = BrokerModel(ME, 1, TIMING, FakeFollowers(), {TOPIC: TOPIC_ID})
    t = register(model)
    for _ in range(40):
        out = model.next_data(t, {(TOPIC, 0): FOLLOWED}, 1)
        assert isinstance(out, float) or out.request_probe is None
        if not isinstance(out, float):
            model.data_failed(out, t)
        t += 0.25


def _outgoing(plan: ProbePlan) -> Outgoing:
    return Outgoing(DATA, "request-probe", plan.version, plan.body, request_probe=plan)


def _answer(plan: ProbePlan, refused: bool) -> Data:
    """A refusal (INVALID_REQUEST where a partition is answered, else the API's top-level error), or
    NOT_CONTROLLER."""
    code = ErrorCode.INVALID_REQUEST if refused else ErrorCode.NOT_CONTROLLER
    if plan.api_key == ApiKey.ALTER_PARTITION:
        return partition_answer(code)
    if plan.api_key == ApiKey.BROKER_HEARTBEAT:
        return BrokerHeartbeatResponse(error_code=code)
    if plan.api_key == ApiKey.CONTROLLED_SHUTDOWN:
        return ControlledShutdownResponse(error_code=code)
    if plan.api_key == ApiKey.BROKER_REGISTRATION:
        return BrokerRegistrationResponse(error_code=code)
    return AlterReplicaStateResponse(error_code=code)


def test_every_kind_is_listed_for_the_rule_map() -> None:
    listed = {name.split(":", 1)[1] for name in PROBE_KINDS if name.startswith("request_probe:")}
    assert listed == set(probes.KINDS)


# ------------------------------------------------------------------ the kinds whose answer is NONE or row b's
REPLICA_STATE_NONE = AlterReplicaStateResponse(
    topics=(
        AlterReplicaStateResponseTopicResult(partitions=(AlterReplicaStateResponsePartitionResult(partition_index=0),)),
    )
)


@pytest.mark.parametrize("seed", range(6))
def test_an_empty_alter_partition_names_no_topic_from_its_own_or_an_unregistered_id(seed: int) -> None:
    plan = built(probes.ALTER_PARTITION_EMPTY, knowledge(), seed)
    body = plan.body
    assert isinstance(body, AlterPartitionRequest) and body.topics == ()
    assert (body.broker_id, body.broker_epoch) == (ME, 40) or (
        body.broker_id < 0 or body.broker_id >= probes.UNREGISTERED_BASE
    )
    assert plan.detail["broker_id"] == body.broker_id
    # NONE is the right answer: never an acceptance; the answer's topics go to the detail
    assert probes.judge(AlterPartitionResponse(), plan.probe) == ([0], False)
    assert probes.answer_facts(plan, AlterPartitionResponse(), 1.0) == {"answer_topics": 0}
    assert probes.answer_facts(plan, partition_answer(0), 1.0) == {"answer_topics": 1}


@pytest.mark.parametrize("seed", range(6))
def test_a_newer_epoch_probe_raises_the_committed_epochs_far_and_keeps_the_rest(seed: int) -> None:
    plan = built(probes.ALTER_PARTITION_NEWER, knowledge(leads=(led(),)), seed)
    _, isr, leader_epoch, partition_epoch, recovery = alter(plan)
    raised = plan.detail["raised"]
    assert (isr, recovery) == ([2, 3], 0) and plan.detail["committed_epochs"] == [4, 9]
    assert (leader_epoch >= 4 + probes.NEWER_EPOCH) == (raised in ("leader_epoch", "both"))
    assert (partition_epoch >= 9 + probes.NEWER_EPOCH) == (raised in ("partition_epoch", "both"))
    assert leader_epoch in (4, *range(4 + probes.NEWER_EPOCH, 4 + 2 * probes.NEWER_EPOCH))
    assert probes.build(probes.ALTER_PARTITION_NEWER, random.Random(seed), knowledge()) is None  # leads nothing


def test_row_bs_not_controller_in_a_partition_is_an_answer_a_top_level_one_is_not() -> None:
    row_b = partition_answer(ErrorCode.NOT_CONTROLLER)
    standby = partition_answer(top=ErrorCode.NOT_CONTROLLER)
    assert not probes.judges_nothing(row_b, probes.ALTER_PARTITION_NEWER)
    assert probes.judges_nothing(standby, probes.ALTER_PARTITION_NEWER)
    assert probes.judges_nothing(row_b, probes.NON_REPLICA) and probes.judges_nothing(row_b)
    assert probes.judge(row_b, probes.ALTER_PARTITION_NEWER) == ([0, 41], False)
    assert probes.judge(partition_answer(0), probes.ALTER_PARTITION_NEWER) == ([0, 0], True)


def test_a_duplicate_registration_is_sent_only_while_the_session_is_surely_fresh() -> None:
    plan = built(probes.REGISTRATION_DUPLICATE, knowledge())
    body = plan.body
    assert isinstance(body, BrokerRegistrationRequest)
    assert (body.broker_id, body.cluster_id) == (ME, "cluster-1")
    assert str(body.incarnation_id) == plan.detail["incarnation_id"]
    assert plan.heard_at == 9.5
    assert (plan.detail["heard_ms_before_sent"], plan.detail["session_timeout_ms"]) == (500, 3000)
    other = built(probes.REGISTRATION_DUPLICATE, knowledge(), seed=2).body
    assert isinstance(other, BrokerRegistrationRequest) and other.incarnation_id != body.incarnation_id
    # a third of the session timeout (1 s) or more since the last unfenced heartbeat, or none: not sent
    for heard_at in (9.0, 8.0, None):
        assert probes.build(probes.REGISTRATION_DUPLICATE, random.Random(1), knowledge(heard_at=heard_at)) is None
    # the answer's facts: how long after that heartbeat it came, and the epoch an acceptance granted
    refused = BrokerRegistrationResponse(error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    assert probes.answer_facts(plan, refused, 10.25) == {"answered_ms_after_heard": 750}
    granted = BrokerRegistrationResponse(broker_epoch=BrokerEpoch(77))
    assert probes.answer_facts(plan, granted, 12.0) == {"answered_ms_after_heard": 2500, "granted_broker_epoch": 77}
    assert probes.judge(granted, plan.probe) == ([0], True)
    assert probes.judge(refused, plan.probe) == ([101], False)


def test_a_no_op_replica_state_asks_for_the_state_the_replica_is_surely_in() -> None:
    second = view(leader=2, partition=1)
    states = {(TOPIC, 0): ONLINE, (TOPIC, 1): OFFLINE}
    seen = set()
    for seed in range(10):
        plan = built(probes.REPLICA_STATE_NO_OP, knowledge(hosted=(FOLLOWED, second), states=states), seed)
        body = plan.body
        assert isinstance(body, AlterReplicaStateRequest) and (body.broker_id, body.broker_epoch) == (ME, 40)
        [topic] = body.topics
        [partition] = topic.partitions
        assert topic.topic_id == TOPIC_ID and body.new_state == states[(TOPIC, partition)]
        seen.add(body.new_state)
    assert seen == {ONLINE, OFFLINE}
    # a replica whose state is not sure (a dir that failed, its OFFLINE not answered): no probe
    assert probes.build(probes.REPLICA_STATE_NO_OP, random.Random(1), knowledge(hosted=(FOLLOWED,), states={})) is None
    assert probes.judge(REPLICA_STATE_NONE, probes.REPLICA_STATE_NO_OP) == (
        [0, 0],
        False,
    )  # NONE is right: no acceptance


# ------------------------------------------------------------------ what the broker model knows and does
def unfenced_heartbeat(model: BrokerModel, t: float) -> None:
    out = model.next_lifecycle(t)
    assert isinstance(out, Outgoing) and out.purpose == "heartbeat"
    model.lifecycle.heartbeat_sent(t)
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), t + 0.01)


def test_the_broker_knows_when_it_was_last_heard_unfenced_and_which_replica_states_are_sure() -> None:
    model, t = chaos_broker()
    model.views = {(TOPIC, 0): FOLLOWED}
    assert model._knowledge(t).heard_at is None  # the heartbeat that unfenced it was never sent by a shell
    t = model.lifecycle.next_heartbeat
    unfenced_heartbeat(model, t)
    known = model._knowledge(t + 0.5)
    assert (known.heard_at, known.now, known.session_timeout_s) == (t, t + 0.5, TIMING.session_timeout_s)
    assert known.replica_states == {(TOPIC, 0): ONLINE}
    model.fail_dir(dir_of(TOPIC, 0))
    assert model._knowledge(t + 0.5).replica_states == {}  # its OFFLINE not answered yet
    out = model._replica_state(*model.disks.pending[0])
    model.data_answered(out, REPLICA_STATE_NONE, t + 0.6)
    assert model._knowledge(t + 0.7).replica_states == {(TOPIC, 0): OFFLINE}
    model.repair_dir(dir_of(TOPIC, 0), t + 0.8)
    assert model._knowledge(t + 0.9).replica_states == {}  # repaired: ONLINE pending, and the dir failed once
    model.begin_shutdown("rpc", t + 1.0)
    assert model._knowledge(t + 1.0).heard_at is None


def test_an_accepted_duplicate_registration_makes_the_broker_register_its_own_incarnation_again() -> None:
    model, t = chaos_broker()
    t = model.lifecycle.next_heartbeat
    unfenced_heartbeat(model, t)
    plan = built_from(model, probes.REGISTRATION_DUPLICATE, t + 0.2)
    model.data_answered(_outgoing(plan), BrokerRegistrationResponse(broker_epoch=BrokerEpoch(500)), t + 0.3)
    [event] = [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    assert event.accepted and event.plan.detail["granted_broker_epoch"] == 500
    assert event.plan.detail["answered_ms_after_heard"] == 300
    assert not model.lifecycle.registered and model.heard_at is None
    out = model.next_lifecycle(t + 0.3)
    assert isinstance(out, Outgoing) and out.purpose == "register"
    assert isinstance(out.body, BrokerRegistrationRequest) and out.body.incarnation_id == model.lifecycle.incarnation_id


def test_row_bs_answer_is_journalled_and_a_standbys_goes_again() -> None:
    model, t = chaos_broker()
    model.leadership.led[(TOPIC, 1)] = led()
    plan = built_from(model, probes.ALTER_PARTITION_NEWER, t)
    model.data_answered(_outgoing(plan), partition_answer(top=ErrorCode.NOT_CONTROLLER), t)
    assert not model.events and model.request_probes.pending is plan
    model.data_answered(_outgoing(plan), partition_answer(ErrorCode.NOT_CONTROLLER), t)
    [event] = [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    assert (event.errors, event.accepted) == ((0, 41), False)


def built_from(model: BrokerModel, kind: str, t: float) -> ProbePlan:
    plan = probes.build(kind, random.Random(1), model._knowledge(t))
    assert plan is not None
    return plan
