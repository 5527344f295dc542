"""A new incarnation's offline replicas are cleared with its registration (broker_sim/check/incarnation.py,
`incarnation-offline`), on hand-built logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_sim.check import CheckResult, check
from broker_sim.journal import Entry, RunStarted
from protocol.records.metadata import (
    LOST_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    BeginTransactionRecord,
    EndTransactionRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)

from .logs import TOPIC_ID, LogBuilder, incarnation, rules

LOST, ONLINE = LOST_DIRECTORY, UNASSIGNED_DIRECTORY


def lost_4(tmp_path: Path) -> LogBuilder:
    """cluster(), then broker 4's replica of partition 1 (replicas [2, 3, 4]) offline, out of the ISR."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(1, isr=(2, 3), directories=(ONLINE, ONLINE, LOST))
    return log


def registration(log: LogBuilder, generation: int) -> RegisterBrokerRecord:
    log.epochs[4] = log.next_offset
    return RegisterBrokerRecord(broker_id=4, incarnation_id=incarnation(4, generation), broker_epoch=log.next_offset)


ONLINE_AGAIN = PartitionChangeRecord(partition_id=1, topic_id=TOPIC_ID, directories=(ONLINE, ONLINE, ONLINE))


#: a fleet run's journal: what fencer's rule is judged for (a log alone is not: module rules)
FLEET_RUN = [RunStarted(1, 1, "chaos", 5, 1, 1000, 3000, 10000)]


def checked(log: LogBuilder, journal: list[Entry] = FLEET_RUN) -> CheckResult:
    log.write()
    return check(log.data_dir, journal)


def test_a_new_incarnation_registered_with_its_replicas_online_in_its_batch_is_clean(tmp_path: Path) -> None:
    log = lost_4(tmp_path)
    log.batch(registration(log, 1), ONLINE_AGAIN)
    assert checked(log).violations == []


def test_a_new_incarnation_whose_replicas_come_online_in_its_transaction_is_clean(tmp_path: Path) -> None:
    log = lost_4(tmp_path)
    log.batch(BeginTransactionRecord(name="register 4"))
    log.batch(registration(log, 1))
    log.batch(ONLINE_AGAIN)
    log.batch(EndTransactionRecord())
    assert checked(log).violations == []


def test_a_new_incarnation_left_with_an_offline_replica_is_reported(tmp_path: Path) -> None:
    log = lost_4(tmp_path)
    at = log.batch(registration(log, 1))
    log.batch(ONLINE_AGAIN)  # a batch later: too late
    result = checked(log)
    assert rules(result) == ["incarnation-offline"]
    violation = result.violations[0]
    assert violation.broker == 4 and violation.offset == at and violation.partition is not None
    # a log alone (Kafka's KRaft keeps a new incarnation's replicas on a missing directory offline)
    assert check(log.data_dir, []).violations == []


def test_the_same_incarnation_registering_again_is_not_judged(tmp_path: Path) -> None:
    log = lost_4(tmp_path)
    log.batch(registration(log, 0))
    assert checked(log).violations == []


def offline_then_restarted(tmp_path: Path) -> CheckResult:
    """The real controller core: broker 1's replicas of a reported offline, then broker 1 silent past
    its session and restarted (a new incarnation registers)."""
    from protocol.messages.alter_replica_state import OFFLINE

    from .test_correct_history import Scenario

    scenario = Scenario(tmp_path / "data")
    h = scenario.h
    scenario.three_brokers_and_a_topic()
    h.alter_replica_state(1, "a", [0, 1], OFFLINE)
    assert h.partition("a", 0).is_offline(1)
    h.advance(10_000)  # broker 1 (and the others) silent past the session: fenced
    scenario.register(1, generation=1)
    scenario.controller.close()
    return check(tmp_path / "data", scenario.fleet_journal())


def test_the_real_core_clears_a_new_incarnations_offline_replicas(tmp_path: Path) -> None:
    assert offline_then_restarted(tmp_path).violations == []


def test_the_real_core_writing_the_registration_alone_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One decision changed (in this test only): the registration written without bringing the
    new incarnation's replicas online."""
    from controller.ops import brokers

    monkeypatch.setattr(brokers, "_bring_replicas_online", lambda state, broker_id, first, hosted: iter([first]))
    assert rules(offline_then_restarted(tmp_path)) == ["incarnation-offline"] * 2
