"""Answers that promise a partition's state, against the log: a PREFERRED election answered elected
(NONE) or not needed has the preferred replica (the first of the partition's replicas) lead at some
time in the flight; an AlterReplicaState answered NONE has the replica offline (OFFLINE) or online
(ONLINE) then; and a partition change record that changes nothing is a violation of its own."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from broker_sim.journal import ElectAnswered, Entry, ReplicaStateAnswered, from_object, to_line
from protocol.error_codes import ErrorCode
from protocol.records.metadata import LOST_DIRECTORY

from .logs import TIMESTAMP_MS, LogBuilder, checked_cluster, rules

MS = 1_000_000
PREFERRED, UNCLEAN = 0, 1
OFFLINE, ONLINE = 1, 2
ASSIGNED = uuid.UUID(int=7)  # a directory of the replica's broker


def answered(at_ms: int, error: int, election: int = PREFERRED, top: int = 0, partition: int = 0) -> ElectAnswered:
    """An ElectLeaders of t-`partition` sent at TIMESTAMP_MS + `at_ms`, answered 5 ms later."""
    sent = (TIMESTAMP_MS + at_ms) * MS
    return ElectAnswered(sent + 5 * MS, sent, 1, election, top, [["t", partition, error]])


def moved_log(tmp_path: Path) -> LogBuilder:
    """t-0 (replicas 1, 2, 3) led by its preferred replica 1 until about TIMESTAMP_MS + 100 ms, by 2
    (1 out of the ISR) from then on until + 10,100 ms, by 1 again after."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, leader=2, isr=(2, 3))
    log.timestamp_ms += 10_000
    log.change(0, isr=(2, 3, 1))
    log.change(0, leader=1)
    return log


@pytest.mark.parametrize(
    ("at_ms", "error", "found"),
    [
        (5_000, ErrorCode.NONE, ["preferred-answer"]),  # answered elected; 2 led throughout
        (5_000, ErrorCode.ELECTION_NOT_NEEDED, ["preferred-answer"]),  # 1 did not lead then
        (5_000, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, []),  # not judged here
        (10_000, ErrorCode.NONE, []),  # the election's batch at + 10,100 ms, within the flight's slack
        (20_000, ErrorCode.NONE, []),
        (20_000, ErrorCode.ELECTION_NOT_NEEDED, []),
        (-200, ErrorCode.ELECTION_NOT_NEEDED, []),  # 1 led until just after the send
    ],
)
def test_a_preferred_answer_is_held_to_who_leads_in_the_log(
    tmp_path: Path, at_ms: int, error: int, found: list[str]
) -> None:
    result = checked_cluster(tmp_path, [answered(at_ms, error)], moved_log(tmp_path))
    assert rules(result) == found, result.violations
    if found:
        assert "t-0" in result.violations[0].message and result.violations[0].journal is not None


def test_unclean_not_controller_and_unknown_partitions_are_not_judged(tmp_path: Path) -> None:
    journal: list[Entry] = [
        answered(5_000, ErrorCode.NONE, election=UNCLEAN),
        answered(5_000, ErrorCode.NONE, top=ErrorCode.NOT_CONTROLLER),
        answered(5_000, ErrorCode.NONE, partition=7),  # the log never held t-7
    ]
    result = checked_cluster(tmp_path, journal, moved_log(tmp_path))
    assert rules(result) == [] and result.unverifiable["preferred_answer"] == 1


def test_an_elect_answer_round_trips() -> None:
    entry = answered(5_000, ErrorCode.ELECTION_NOT_NEEDED)
    assert from_object(json.loads(to_line(entry))) == entry


def test_a_partition_change_that_changes_nothing_is_a_violation(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    empty = log.change(0)
    log.change(1, isr=(2, 3))  # a change: judged as ever
    result = checked_cluster(tmp_path, [], log)
    assert rules(result) == ["change-noop"]
    assert result.violations[0].offset == empty and "t-0" in result.violations[0].message


def reported(at_ms: int, new_state: int, errors: list[int], broker: int = 1) -> ReplicaStateAnswered:
    """Broker `broker`'s AlterReplicaState of its replica of t-0 sent at TIMESTAMP_MS + `at_ms`,
    answered 5 ms later."""
    sent = (TIMESTAMP_MS + at_ms) * MS
    return ReplicaStateAnswered(sent + 5 * MS, sent, broker, 1, 1, new_state, [["t", 0]], errors)


def offline_log(tmp_path: Path) -> LogBuilder:
    """Broker 1's replica of t-0 online until about TIMESTAMP_MS + 100 ms, offline (its directory
    LOST, out of the ISR, 2 leading) until + 10,100 ms, online again after."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.change(0, leader=2, isr=(2, 3), directories=(LOST_DIRECTORY, ASSIGNED, ASSIGNED))
    log.timestamp_ms += 10_000
    log.change(0, directories=(ASSIGNED, ASSIGNED, ASSIGNED))
    return log


@pytest.mark.parametrize(
    ("at_ms", "new_state", "errors", "found"),
    [
        (5_000, ONLINE, [0, 0], ["replica-state-answer"]),  # answered online; offline throughout
        (5_000, OFFLINE, [0, 0], []),
        (20_000, OFFLINE, [0, 0], ["replica-state-answer"]),  # answered offline; online throughout
        (20_000, ONLINE, [0, 0], []),
        (10_000, ONLINE, [0, 0], []),  # the mark cleared at + 10,100 ms, within the flight's slack
        (5_000, ONLINE, [0, 3], []),  # refused: judged elsewhere
        (5_000, ONLINE, [58, -1], []),  # STALE_BROKER_EPOCH
        (5_000, ONLINE, [], []),  # no answer
    ],
)
def test_a_replica_state_answer_is_held_to_the_log(
    tmp_path: Path, at_ms: int, new_state: int, errors: list[int], found: list[str]
) -> None:
    result = checked_cluster(tmp_path, [reported(at_ms, new_state, errors)], offline_log(tmp_path))
    assert rules(result) == found, result.violations
    if found:
        assert "broker 1's replica of t-0" in result.violations[0].message and result.violations[0].broker == 1
