"""Leadership: a shutting-down leader without successor stays leader, a replica back online
in a leaderless ISR is elected, an unclean election only when the fleet asked for one; and a request
refused as stale is not sent again on its connection. Hand-built logs and journals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker_sim.check import CheckResult, check
from broker_sim.journal import AdminProbe, ControlRefused, Entry, RunEnded, RunStarted
from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.messages.elect_leaders import UNCLEAN
from protocol.records.metadata import (
    LOST_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    EndTransactionRecord,
    PartitionChangeRecord,
)

from .logs import TIMESTAMP_MS, TOPIC_ID, LogBuilder, rules
from .test_correct_history import Scenario

MS = 1_000_000
LOST = (LOST_DIRECTORY, UNASSIGNED_DIRECTORY, UNASSIGNED_DIRECTORY)
ONLINE_DIRS = (UNASSIGNED_DIRECTORY,) * 3


def checked(tmp_path: Path, log: LogBuilder, journal: list[Entry] | None = None) -> CheckResult:
    """The log checked with `journal` (by default a fleet run's, which these rules want)."""
    log.write()
    return check(tmp_path / "data", run() if journal is None else journal)


def sole_leader(tmp_path: Path) -> LogBuilder:
    """Partition 0 of `t` led by broker 1, alone in its ISR, then broker 1 flagged in controlled shutdown."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1,))
    log.change_broker(1, in_controlled_shutdown=1)
    return log


# ---------------------------------------------------------------------- shutdown-keeps-sole-leader
def test_a_shutting_down_sole_leader_made_leaderless_is_a_violation(tmp_path: Path) -> None:
    log = sole_leader(tmp_path)
    offset = log.change(0, leader=-1)
    result = checked(tmp_path, log)
    assert rules(result) == ["shutdown-keeps-sole-leader"]
    assert result.violations[0].offset == offset and result.violations[0].broker == 1
    assert rules(check(tmp_path / "data", [])) == []  # the log alone: KRaft's outcome, not judged


def test_the_flag_and_the_change_in_one_batch_are_judged_too(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1,))
    flag = BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=log.epochs[1], in_controlled_shutdown=1)
    log.batch(flag, PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=-1))
    assert rules(checked(tmp_path, log)) == ["shutdown-keeps-sole-leader"]


def test_a_sole_leader_that_stays_or_hands_over_is_right(tmp_path: Path) -> None:
    log = sole_leader(tmp_path)
    log.change(1, isr=(3, 4), leader=3)  # broker 2 leaves partition 1 (it is not shutting down)
    log.change(0, isr=(1, 2), epoch=None)  # the leader adds broker 2 back: a successor
    log.change(0, isr=(2,), leader=2)
    assert rules(checked(tmp_path, log)) == []


def test_fencing_in_the_same_batch_or_transaction_makes_it_leaderless_rightly(tmp_path: Path) -> None:
    log = sole_leader(tmp_path)
    fence = BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=log.epochs[1], fenced=1)
    log.batch(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=-1), fence)
    assert rules(checked(tmp_path, log)) == []

    other = LogBuilder(tmp_path / "other")
    other.cluster()
    other.change(0, isr=(1,))
    other.change_broker(1, in_controlled_shutdown=1)
    other.batch(BeginTransactionRecord(name="fencing of broker 1"))
    other.batch(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=-1))
    other.batch(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=other.epochs[1], fenced=1))
    other.batch(EndTransactionRecord())
    other.write()
    assert rules(check(tmp_path / "other", [])) == []


def test_an_offline_replica_makes_a_shutting_down_leader_leaderless_rightly(tmp_path: Path) -> None:
    log = sole_leader(tmp_path)
    log.change(0, leader=-1, directories=LOST)
    assert rules(checked(tmp_path, log)) == []


def test_a_leader_not_shutting_down_is_not_this_rules(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1,))
    log.change(0, leader=-1)
    assert rules(checked(tmp_path, log)) == []


# ---------------------------------------------------------------------- online-elects
def offline_sole_member(tmp_path: Path) -> LogBuilder:
    """Partition 0 of `t`: broker 1 alone in the ISR, its replica offline, so leaderless."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1,))
    log.change(0, leader=-1, directories=LOST)
    return log


def test_a_replica_back_online_in_a_leaderless_isr_must_be_elected(tmp_path: Path) -> None:
    log = offline_sole_member(tmp_path)
    offset = log.change(0, directories=ONLINE_DIRS)
    log.change(0, leader=1)  # a batch later: too late
    result = checked(tmp_path, log)
    assert rules(result) == ["online-elects"]
    assert result.violations[0].offset == offset and result.violations[0].broker == 1


def test_online_and_elected_in_one_record_or_batch_is_right(tmp_path: Path) -> None:
    log = offline_sole_member(tmp_path)
    log.change(0, directories=ONLINE_DIRS, leader=1)
    assert rules(checked(tmp_path, log)) == []

    other = offline_sole_member(tmp_path / "other")
    other.batch(
        PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, directories=ONLINE_DIRS),
        PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=1),
    )
    other.write()
    assert rules(check(tmp_path / "other" / "data", [])) == []


def test_a_replica_online_on_an_inactive_broker_is_not_elected(tmp_path: Path) -> None:
    log = offline_sole_member(tmp_path)
    log.change_broker(1, fenced=1)
    log.change(0, directories=ONLINE_DIRS)
    assert rules(checked(tmp_path, log)) == []


# ---------------------------------------------------------------------- unclean-unasked
def unclean_election(tmp_path: Path, *, recovering: bool = True) -> tuple[LogBuilder, int]:
    """Partition 0 of `t` left with broker 1 alone in its ISR, leaderless, broker 1 fenced; then broker 2
    elected from outside the ISR; (the log, the election's offset)."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1,))
    log.change(0, leader=-1)
    log.change_broker(1, fenced=1)
    state = 1 if recovering else -1
    return log, log.change(0, leader=2, isr=(2,), leader_recovery_state=state)


def run(*entries: Entry) -> list[Entry]:
    return [RunStarted((TIMESTAMP_MS - 10_000) * MS, 1, "chaos", 5, 1, 1000, 3000, 10000), *entries]


def unclean(sent_ms: int, answered_ms: int | None, partition: int = 0) -> AdminProbe:
    """An UNCLEAN ElectLeaders of partition `partition` of `t`: partition 0 elected, another refused as led."""
    detail = {"topic": "t", "partition": partition, "election_type": 1}
    code = 0 if partition == 0 else ErrorCode.ELECTION_NOT_NEEDED
    answer = [0, code] if answered_ms is not None else []
    answered = answered_ms if answered_ms is not None else sent_ms + 1
    return AdminProbe(answered * MS, sent_ms * MS, "ElectLeaders", 1, "elect-unclean-led", answer, not code, detail)


def test_an_unclean_election_nobody_asked_for_is_a_violation(tmp_path: Path) -> None:
    for recovering in (True, False):
        log, offset = unclean_election(tmp_path / str(recovering), recovering=recovering)
        later = TIMESTAMP_MS + 10_000
        result = checked(tmp_path / str(recovering), log, run(unclean(later, later + 5, partition=1)))
        # left RECOVERED, the election is not Kafka's either (KIP-704)
        assert rules(result) == (["unclean-unasked"] if recovering else ["unclean-election", "unclean-unasked"])
        unasked = next(v for v in result.violations if v.rule == "unclean-unasked")
        assert unasked.offset == offset and unasked.broker == 2


@pytest.mark.parametrize(
    ("leader", "isr", "why"),
    [
        (3, (3,), "elects 3 uncleanly where the first eligible replica is 2"),
        (2, (2, 3), "elects 2 uncleanly with the ISR [2, 3], recovery state 1"),
    ],
)
def test_an_unclean_election_is_the_first_eligible_replica_alone_in_the_isr(
    tmp_path: Path, leader: int, isr: tuple[int, ...], why: str
) -> None:
    """Kafka's PartitionChangeBuilder: the first acceptable replica in assignment order (broker 1,
    the last ISR member, is fenced; 2 and 3 are not), the ISR that replica alone, RECOVERING."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, isr=(1,))
    log.change(0, leader=-1)
    log.change_broker(1, fenced=1)
    offset = log.change(0, leader=leader, isr=isr, leader_recovery_state=1)
    result = checked(tmp_path, log, run(unclean(TIMESTAMP_MS, TIMESTAMP_MS + 10_000)))
    assert [(v.rule, v.offset) for v in result.violations if v.rule == "unclean-election"] == [
        ("unclean-election", offset)
    ]
    assert why in next(v.message for v in result.violations if v.rule == "unclean-election")


def test_an_unclean_election_the_fleet_asked_for_is_right(tmp_path: Path) -> None:
    log, _ = unclean_election(tmp_path)
    assert rules(checked(tmp_path, log, run(unclean(TIMESTAMP_MS, TIMESTAMP_MS + 10_000)))) == []


def test_an_unanswered_unclean_request_may_be_decided_later(tmp_path: Path) -> None:
    log, _ = unclean_election(tmp_path)
    later = TIMESTAMP_MS + 10_000
    assert rules(checked(tmp_path, log, run(unclean(TIMESTAMP_MS, None), unclean(later, later, partition=1)))) == []


def test_unclean_elections_are_judged_only_in_a_fleet_run(tmp_path: Path) -> None:
    log, _ = unclean_election(tmp_path)
    assert rules(checked(tmp_path, log, [])) == []


def test_an_election_after_the_runs_end_or_the_last_admin_probe_is_not_judged(tmp_path: Path) -> None:
    log, _ = unclean_election(tmp_path)
    ended = RunEnded((TIMESTAMP_MS - 5000) * MS, True)
    assert rules(checked(tmp_path, log, run(ended))) == []
    other, _ = unclean_election(tmp_path / "other")
    early = TIMESTAMP_MS - 500  # a probe cut by the run's end leaves no entry
    assert rules(checked(tmp_path / "other", other, run(unclean(early, early + 5, partition=1)))) == []


# ---------------------------------------------------------------------- stale-resent
def refused(connection: int = 7, digest: str = "d1", controller_epoch: int = 3, error: int = 11) -> ControlRefused:
    return ControlRefused(1, 2, 40, "LeaderAndIsr", 5, 40, controller_epoch, 4, error, digest, connection)


def test_a_request_refused_as_stale_and_sent_again_on_its_connection_is_a_violation(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    result = checked(tmp_path, log, [refused(), refused()])
    assert rules(result) == ["stale-resent"] and result.violations[0].broker == 2
    assert rules(check(tmp_path / "data", [refused(error=77), refused(error=77)])) == ["stale-resent"]


def test_another_connection_epoch_or_content_is_not_a_resend(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    journal: list[Entry] = [
        refused(),
        refused(connection=8),  # a lost answer: the controller re-sends on a new connection
        refused(controller_epoch=4),
        refused(digest="d2"),
        refused(error=ErrorCode.FENCED_LEADER_EPOCH),
        refused(error=ErrorCode.FENCED_LEADER_EPOCH),
        refused(digest="", connection=0),  # an older journal
        refused(digest="", connection=0),
    ]
    result = checked(tmp_path, log, journal)
    assert rules(result) == []
    assert result.unverifiable.get("control_refused") == 2


# ---------------------------------------------------------------------- the real controller core
def test_the_real_core_keeps_a_sole_leader_elects_an_online_replica_and_elects_unclean_only_when_asked(
    tmp_path: Path,
) -> None:
    """The controller's own decisions (tests.controller.harness) against the three log rules: a leader
    whose ISR is itself stays leader through its controlled shutdown; a sole ISR member whose replica
    goes offline and comes back online is elected again; an UNCLEAN ElectLeaders the journal shows
    is no violation, the same election without it is."""
    scenario = Scenario(tmp_path / "data")
    h = scenario.h
    scenario.three_brokers_and_a_topic()
    leader = h.partition("a", 0).leader
    scenario.alter_isr("a", 0, [leader])
    response, _ = h.alter_replica_state(leader, "a", [0], OFFLINE)
    assert response.topics[0].partitions[0].error_code == 0 and h.partition("a", 0).leader == -1
    response, _ = h.alter_replica_state(leader, "a", [0], ONLINE)
    assert h.partition("a", 0).leader == leader
    sole = h.partition("a", 1).leader
    scenario.alter_isr("a", 1, [sole])
    h.controlled_shutdown(sole)
    assert h.partition("a", 1).leader == sole  # it stays: no eligible successor
    scenario.expire(sole)  # fenced at last: leaderless with it
    scenario.elect(UNCLEAN, "a", 1)
    scenario.controller.close()
    journal = scenario.fleet_journal()
    assert rules(check(tmp_path / "data", journal)) == ["unclean-unasked"]
    detail = {"topic": "a", "partition": 1, "election_type": 1}
    sent, answered = TIMESTAMP_MS * MS, (TIMESTAMP_MS + 60_000) * MS  # the batches are stamped from TIMESTAMP_MS
    asked = AdminProbe(answered, sent, "ElectLeaders", 1, "elect-unclean-led", [0, 0], True, detail)
    assert rules(check(tmp_path / "data", [*journal, asked])) == []


def test_the_real_core_with_kraft_shutdown_or_an_online_replica_left_unelected_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same steps with one decision of the core changed (in this test only): controlled shutdown
    makes a leader without successor leaderless (KRaft's outcome), and ONLINE never elects."""
    from controller.ops import brokers, changes, replica_state

    def removal(*args: Any, keep_stuck_leader: bool = False, **kwargs: Any) -> Any:
        return changes.removal(*args, **kwargs)

    def bring_online(state: Any, tp: Any, part: Any, broker_id: int, *, may_lead: bool) -> Any:
        return changes.bring_online(state, tp, part, broker_id, may_lead=False)

    monkeypatch.setattr(brokers, "removal", removal)
    monkeypatch.setattr(replica_state, "bring_online", bring_online)
    scenario = Scenario(tmp_path / "data")
    h = scenario.h
    scenario.three_brokers_and_a_topic()
    leader = h.partition("a", 0).leader
    scenario.alter_isr("a", 0, [leader])
    h.alter_replica_state(leader, "a", [0], OFFLINE)
    h.alter_replica_state(leader, "a", [0], ONLINE)
    assert h.partition("a", 0).leader == -1
    sole = h.partition("a", 1).leader
    scenario.alter_isr("a", 1, [sole])
    h.controlled_shutdown(sole)
    assert h.partition("a", 1).leader == -1
    scenario.controller.close()
    assert rules(check(tmp_path / "data", scenario.fleet_journal())) == [
        "online-elects",
        "shutdown-keeps-sole-leader",
    ]
    # a log alone (a data dir Kafka wrote: KRaft makes such a partition leaderless) is not held to fencer's choice
    assert rules(check(tmp_path / "data", scenario.journal)) == []
