"""Which replica a moved leadership goes to (broker_sim/check/election_order.py, `leader-order`), on
hand-built logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker_sim.check import CheckResult, check
from protocol.records.metadata import BrokerRegistrationChangeRecord, PartitionChangeRecord

from .logs import TOPIC_ID, LogBuilder, rules


def fence_1(tmp_path: Path, leader: int, isr: tuple[int, ...] = (2, 3)) -> CheckResult:
    """cluster() (partition 0: replicas [1, 2, 3], led by 1), then broker 1 fenced and `leader` elected."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.batch(
        PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=isr, leader=leader),
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=log.epochs[1], fenced=1),
    )
    log.write()
    return check(log.data_dir)


def test_leadership_moved_to_the_first_eligible_isr_member_is_clean(tmp_path: Path) -> None:
    assert fence_1(tmp_path / "a", leader=2).violations == []
    # 2 left the ISR: 3 is the first eligible member
    assert fence_1(tmp_path / "b", leader=3, isr=(3,)).violations == []


def test_leadership_moved_past_an_earlier_eligible_isr_member_is_reported(tmp_path: Path) -> None:
    result = fence_1(tmp_path, leader=3)
    assert rules(result) == ["leader-order"]
    assert result.violations[0].broker == 3 and "replica 2" in result.violations[0].message


def test_a_move_away_from_an_eligible_first_replica_is_reported_and_the_way_back_is_clean(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    moved = log.change(0, leader=2)  # 1 still eligible and first: no election picks 2
    log.change(0, leader=1)  # a preferred election: replicas[0]
    log.write()
    result = check(log.data_dir)
    assert rules(result) == ["leader-order"] and result.violations[0].offset == moved


def fenced_leaders(tmp_path: Path) -> CheckResult:
    """The real controller core: 4 brokers, topic a (4 partitions, RF 3); a broker silent past its
    session is fenced and its leaderships move."""
    from .test_correct_history import Scenario

    scenario = Scenario(tmp_path / "data")
    h = scenario.h
    for broker_id in (1, 2, 3, 4):
        scenario.register(broker_id)
    scenario.heartbeat_all(1, 2, 3, 4)
    scenario.create("a", 4, 3)
    leader = h.partition("a", 0).leader
    h.advance(5_000, expire=False)
    for broker_id in (1, 2, 3, 4):
        if broker_id != leader:
            h.heartbeat(broker_id)
    h.advance(5_000)  # only `leader` is silent past its session
    assert h.partition("a", 0).leader != leader
    scenario.controller.close()
    return check(tmp_path / "data", scenario.journal)


def test_the_real_core_moving_leadership_on_fencing_is_clean(tmp_path: Path) -> None:
    assert fenced_leaders(tmp_path).violations == []


def test_the_real_core_moving_leadership_to_the_last_eligible_member_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One decision changed (in this test only): the successor is the last eligible ISR member."""
    import dataclasses

    from controller.ops import brokers, changes

    def removal(tp: Any, part: Any, broker_id: int, eligible: Any, **options: Any) -> Any:
        record = changes.removal(tp, part, broker_id, eligible, **options)
        candidates = [r for r in part.replicas if r in part.isr and r != broker_id and eligible(r)]
        if record is None or part.leader != broker_id or len(candidates) < 2:
            return record
        return dataclasses.replace(record, leader=candidates[-1])

    monkeypatch.setattr(brokers, "removal", removal)
    assert "leader-order" in rules(fenced_leaders(tmp_path))
