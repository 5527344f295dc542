"""Request probes: every kind built and listed for the rule map, the lifecycle and replica-state
kinds built from what a broker knows, and answers judged.
"""

from __future__ import annotations

import random

import pytest

from broker_sim.model import probes, request_probes
from broker_sim.model.probe_kinds import PROBE_KINDS
from protocol.error_codes import ErrorCode
from protocol.ids import BrokerEpoch
from protocol.messages.alter_partition import AlterPartitionRequest
from protocol.messages.alter_replica_state import OFFLINE, ONLINE, AlterReplicaStateRequest, AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.spec import ZERO_UUID

from .helpers import TOPIC, TOPIC_ID, view
from .probe_fixtures import (
    FOLLOWED,
    LED_VIEW,
    ME,
    REPLICA_STATE_NONE,
    STRANGER_VIEW,
    built,
    knowledge,
    led,
    partition_answer,
)


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
    assert {
        plan.probe for kind in probes.KINDS if (plan := request_probes.build(kind, random.Random(3), known))
    } == set(probes.KINDS)


def test_every_kind_is_listed_for_the_rule_map() -> None:
    listed = {name.split(":", 1)[1] for name in PROBE_KINDS if name.startswith("request_probe:")}
    assert listed == set(probes.KINDS)


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


# ------------------------------------------------------------------ the kinds whose answer is NONE or row b's
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
        assert (
            request_probes.build(probes.REGISTRATION_DUPLICATE, random.Random(1), knowledge(heard_at=heard_at)) is None
        )
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
    assert (
        request_probes.build(probes.REPLICA_STATE_NO_OP, random.Random(1), knowledge(hosted=(FOLLOWED,), states={}))
        is None
    )
    assert probes.judge(REPLICA_STATE_NONE, probes.REPLICA_STATE_NO_OP) == (
        [0, 0],
        False,
    )  # NONE is right: no acceptance
