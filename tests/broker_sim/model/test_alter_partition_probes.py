"""Request probes on AlterPartition: each kind built from what a broker knows, on the epochs it
holds or sees, and the kinds whose right answer is NONE or row b's judged from their answer.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from broker_sim.model import probes, request_probes
from broker_sim.model.alter_partition_probes import MANY_NAMINGS, NEWER_EPOCH
from broker_sim.model.leadership import RECOVERING
from protocol.api_keys import ApiKey
from protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from protocol.spec import ZERO_UUID

from .helpers import TOPIC_ID
from .probe_fixtures import (
    FOLLOWED,
    LED_VIEW,
    ME,
    STRANGER_VIEW,
    VERSIONS,
    alter,
    built,
    knowledge,
    led,
    partition_answer,
)


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
    assert request_probes.build(probes.FOLLOWER, random.Random(1), knowledge(hosted=(LED_VIEW, leaderless))) is None


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
    assert set(namings) == {2, MANY_NAMINGS} and 5 <= namings.count(MANY_NAMINGS) <= 15


def test_a_busy_leadership_is_not_probed() -> None:
    busy = led(in_flight=True)
    waiting = led(partition=2, waiting_since=1.0)
    assert request_probes.build(probes.DUPLICATE, random.Random(1), knowledge(leads=(busy, waiting))) is None


def test_the_recovery_state_probes_break_row_g_from_v1_only() -> None:
    known = knowledge(leads=(led(),))
    _, isr, _, _, recovery = alter(built(probes.RECOVERY_ROLLBACK, known))
    assert (isr, recovery) == ([ME], RECOVERING)
    _, isr, _, _, recovery = alter(built(probes.RECOVERING_ISR, known))
    assert (isr, recovery) == ([2, 3], RECOVERING)
    _, isr, _, _, recovery = alter(built(probes.RECOVERY_BYTE, known))
    assert isr == [2, 3] and recovery not in (0, 1)
    # a RECOVERING partition cannot roll back; v0 has no recovery state
    assert request_probes.build(probes.RECOVERY_ROLLBACK, random.Random(1), knowledge(leads=(led(recovery=1),))) is None
    v0 = knowledge(versions={**VERSIONS, ApiKey.ALTER_PARTITION: 0}, leads=(led(),))
    assert request_probes.build(probes.RECOVERY_BYTE, random.Random(1), v0) is None


def test_a_recovered_state_the_controller_never_said_is_not_rolled_back() -> None:
    # a LeaderAndIsr before v6 says no recovery state: the partition may be RECOVERING (an unclean
    # election), where RECOVERING with the leader alone is a change the controller accepts
    unsaid = knowledge(leads=(led(recovery_known=False),))
    assert request_probes.build(probes.RECOVERY_ROLLBACK, random.Random(1), unsaid) is None
    assert request_probes.build(probes.RECOVERING_ISR, random.Random(1), unsaid) is not None


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
    assert request_probes.build(probes.FOLLOWER, random.Random(1), knowledge(hosted=(unnamed,), ids={})) is None
    v1 = knowledge(versions={**VERSIONS, ApiKey.ALTER_PARTITION: 1}, hosted=(unnamed,), ids={})
    assert request_probes.build(probes.FOLLOWER, random.Random(1), v1) is not None


# ------------------------------------------------------------------ the kinds whose answer is NONE or row b's
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
    assert (leader_epoch >= 4 + NEWER_EPOCH) == (raised in ("leader_epoch", "both"))
    assert (partition_epoch >= 9 + NEWER_EPOCH) == (raised in ("partition_epoch", "both"))
    assert leader_epoch in (4, *range(4 + NEWER_EPOCH, 4 + 2 * NEWER_EPOCH))
    assert request_probes.build(probes.ALTER_PARTITION_NEWER, random.Random(seed), knowledge()) is None  # leads nothing
