"""The leader's ISR decisions and its reaction to every AlterPartition answer, without sockets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from broker_sim.model.leadership import Leadership
from broker_sim.model.requests import Proposal
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)

from .helpers import TIMING, TOPIC, TOPIC_ID, FakeFollowers, view

VERSION = 2


def answer(proposal: Proposal, error: int = 0) -> AlterPartitionResponse:
    """The controller's answer: the proposal applied (NONE), or only the error."""
    data = AlterPartitionResponsePartitionData(partition_index=proposal.partition, error_code=error)
    if not error:
        data = AlterPartitionResponsePartitionData(
            partition_index=proposal.partition,
            leader_id=1,
            leader_epoch=proposal.leader_epoch,
            isr=proposal.isr,
            partition_epoch=proposal.partition_epoch + 1,
        )
    return AlterPartitionResponse(topics=(AlterPartitionResponseTopicData(topic_id=TOPIC_ID, partitions=(data,)),))


def leading(followers: FakeFollowers, isr: tuple[int, ...] = (1, 2, 3)) -> Leadership:
    leadership = Leadership(1, TIMING)
    assert leadership.sync([view(isr=isr)], 0.0) == []
    return leadership


def shrink_proposal(leadership: Leadership, followers: FakeFollowers) -> Proposal:
    followers.caught_up[3] = False
    assert leadership.decide(1.0, followers, 100) == []  # lagging, but not for lag_max_s yet
    (proposal,) = leadership.decide(1.0 + TIMING.lag_max_s + 0.01, followers, 100)
    return proposal


def test_a_partition_is_led_only_from_a_view_naming_this_broker() -> None:
    leadership = Leadership(1, TIMING)
    leadership.sync([view(leader=2), view(partition=1), view(partition=2, stopped=True)], 0.0)
    assert list(leadership.led) == [(TOPIC, 1)]


def test_a_follower_lagging_longer_than_the_limit_is_shrunk_out_and_added_back_when_caught_up() -> None:
    followers = FakeFollowers()
    followers.epochs = {2: 20, 3: 30}
    leadership = leading(followers)
    proposal = shrink_proposal(leadership, followers)
    assert (proposal.isr, proposal.member_epochs, proposal.partition_epoch) == ((1, 2), (100, 20), 0)
    assert leadership.decide(9.0, followers, 100) == []  # one change in flight per partition
    acked, missing = leadership.answered([proposal], answer(proposal), VERSION, 4.0)
    assert missing == [] and acked[0].isr == (1, 2) and acked[0].partition_epoch == 1
    assert leadership.decide(5.0, followers, 100) == []  # still lagging: nothing to add
    followers.caught_up[3] = True
    (expand,) = leadership.decide(6.0, followers, 100)
    assert (expand.isr, expand.partition_epoch) == ((1, 2, 3), 1)


def test_a_caught_up_follower_that_is_not_eligible_is_not_proposed() -> None:
    followers = FakeFollowers()
    leadership = leading(followers, isr=(1, 2))
    followers.eligible[3] = False
    assert leadership.decide(1.0, followers, 100) == []
    followers.eligible[3] = True
    assert [p.isr for p in leadership.decide(2.0, followers, 100)] == [(1, 2, 3)]


@pytest.mark.parametrize("error", [ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED])
def test_ineligible_goes_back_to_the_committed_state_and_tries_again_after_a_backoff(error: int) -> None:
    followers = FakeFollowers()
    leadership = leading(followers, isr=(1, 2))
    (proposal,) = leadership.decide(1.0, followers, 100)
    leadership.answered([proposal], answer(proposal, error), VERSION, 1.0)
    assert leadership.led[(TOPIC, 0)].isr == (1, 2)  # the committed ISR
    assert leadership.decide(1.0 + TIMING.backoff(1) / 2, followers, 100) == []
    assert [p.isr for p in leadership.decide(1.0 + TIMING.backoff(1), followers, 100)] == [(1, 2, 3)]


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.NEW_LEADER_ELECTED,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
    ],
)
def test_a_stale_view_waits_for_a_newer_leader_and_isr(error: int) -> None:
    followers = FakeFollowers()
    leadership = leading(followers, isr=(1, 2))
    (proposal,) = leadership.decide(1.0, followers, 100)
    leadership.answered([proposal], answer(proposal, error), VERSION, 1.0)
    assert leadership.decide(20.0, followers, 100) == []  # waiting, however long (up to lai_wait_s)
    leadership.sync([view(isr=(1, 2), partition_epoch=0)], 21.0)  # the same epochs: still waiting
    assert leadership.decide(22.0, followers, 100) == []
    leadership.sync([view(isr=(1, 2), partition_epoch=3)], 23.0)  # a newer LeaderAndIsr
    (retry,) = leadership.decide(24.0, followers, 100)
    assert retry.partition_epoch == 3


def test_not_controller_retries_the_same_change_with_a_growing_backoff() -> None:
    followers = FakeFollowers()
    leadership = leading(followers, isr=(1, 2))
    (proposal,) = leadership.decide(1.0, followers, 100)
    leadership.answered([proposal], answer(proposal, ErrorCode.NOT_CONTROLLER), VERSION, 1.0)
    assert leadership.decide(1.0 + TIMING.backoff(1) - 0.01, followers, 100) == []
    (again,) = leadership.decide(1.0 + TIMING.backoff(1), followers, 100)
    assert again == proposal
    leadership.failed([again], 2.0)  # a network error
    assert leadership.decide(2.0 + TIMING.backoff(1), followers, 100) == []
    assert leadership.decide(2.0 + TIMING.backoff(2), followers, 100) == [proposal]


def test_top_level_stale_broker_epoch_waits_for_a_newer_leader_and_isr() -> None:
    followers = FakeFollowers()
    leadership = leading(followers, isr=(1, 2))
    (proposal,) = leadership.decide(1.0, followers, 100)
    leadership.answered([proposal], AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH), VERSION, 1.0)
    assert leadership.decide(10.0, followers, 100) == []


def test_a_partition_the_answer_leaves_out_is_retried_and_reported() -> None:
    followers = FakeFollowers()
    leadership = leading(followers, isr=(1, 2))
    (proposal,) = leadership.decide(1.0, followers, 100)
    acked, missing = leadership.answered([proposal], AlterPartitionResponse(), VERSION, 1.0)
    assert (acked, missing) == ([], [proposal])
    assert leadership.decide(1.0 + TIMING.backoff(1), followers, 100) == [proposal]


def test_a_newer_view_naming_another_leader_deposes_and_is_returned_for_replays() -> None:
    followers = FakeFollowers()
    leadership = leading(followers)
    deposed = leadership.sync([view(leader=2, leader_epoch=1)], 2.0)
    assert [(d.topic, d.leader_epoch) for d in deposed] == [(TOPIC, 0)]
    assert leadership.led == {}


def test_a_recovering_partition_first_reports_recovered_with_the_same_isr() -> None:
    followers = FakeFollowers()
    leadership = Leadership(1, TIMING)
    leadership.sync([replace(view(isr=(1,)), leader_recovery_state=1)], 0.0)
    (proposal,) = leadership.decide(1.0, followers, 100)
    assert (proposal.isr, proposal.recovery_state) == ((1,), 0)
