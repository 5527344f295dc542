"""The admin probes against the log: an admin probe the controller accepted (a topic it
created named by the violation, and judged by the log's rules too), or refused with another error
than semantics.md names; an unclean election is right for a partition that was leaderless while
the request was in flight."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType

from analytics.journal import JOURNAL_FIELDS
from broker_sim.check.admin_probe_rules import EXPECTED, held_between, wrong_admin_answer
from broker_sim.journal import AdminProbe, Entry, from_object, to_line
from broker_sim.model.admin_probes import ALL_KINDS
from protocol.records.metadata import PartitionRecord, TopicRecord

from .logs import OTHER_TOPIC_ID, TIMESTAMP_MS, LogBuilder, checked_cluster, rules

MS = 1_000_000
API = {"create": "CreateTopics", "delete": "DeleteTopics", "elect": "ElectLeaders"}


def probe(
    kind: str, errors: list[int], version: int = 2, accepted: bool = False, at_ms: int = 0, **detail: Any
) -> AdminProbe:
    """An admin probe sent at TIMESTAMP_MS + `at_ms`, answered 5 ms later."""
    sent = (TIMESTAMP_MS + at_ms) * MS
    return AdminProbe(sent + 5 * MS, sent, API[kind.split("-")[0]], version, kind, errors, accepted, detail)


@pytest.mark.parametrize(
    ("entry", "right"),
    [
        (probe("create-taken", [0, 36]), True),
        (probe("create-taken", [0, 38]), False),  # the name checked after the replication factor
        (probe("create-replication-factor", [0, 38]), True),
        (probe("create-replication-factor", [0, 39]), False),
        (probe("create-unregistered-replica", [0, 39]), True),
        (probe("create-unregistered-replica", [0, 42]), False),
        (probe("create-empty-replicas", [0, 39]), True),
        (probe("create-empty-replicas", [0, 37]), False),
        (probe("create-empty-replicas", [0, 39, 39]), False),  # a topic the request did not name
        (probe("create-empty-replicas", [0]), False),  # the topic is missing from the answer
        (probe("delete-unknown", [0, 3], version=5, by_id=False), True),
        (probe("delete-unknown", [0, 3], version=6, by_id=False), True),  # v6 by name
        (probe("delete-unknown", [0, 100], version=6, by_id=True), True),
        (probe("delete-unknown", [0, 3], version=6, by_id=True), False),
        (probe("delete-unknown", [0, 100], version=6, by_id=False), False),
        (probe("elect-unknown-topic", [0, 3], version=0), True),
        (probe("elect-unknown-topic", [0, 3], version=2), True),
        (probe("elect-unknown-topic", [42, 3], version=2), False),  # a top-level refusal
        (probe("elect-unknown-partition", [0, 3], version=1), True),
        (probe("elect-unknown-partition", [0, 80], version=1), False),  # decided as an election
        (probe("elect-unclean-led", [0, 84], version=1), True),
        (probe("elect-unclean-led", [0, 83], version=1), False),  # wrong unless leaderless (the log's)
        (probe("elect-unclean-led", [0, 80], version=2), False),  # judged as a preferred election
        (probe("create-taken", [0, 0], accepted=True), True),  # probe-accepted's
        (probe("create-taken", []), True),  # no answer: nothing to judge
        (AdminProbe(1, 1, "CreateTopics", 7, "a-later-fleets-kind", [0, 12], False, {}), True),
    ],
)
def test_an_admin_probe_must_be_refused_with_the_error_its_kind_names(entry: AdminProbe, right: bool) -> None:
    assert (wrong_admin_answer(entry) is None) == right


def test_an_unclean_election_may_find_no_eligible_replica_only_when_leaderless() -> None:
    entry = probe("elect-unclean-led", [0, 83], version=1)
    assert wrong_admin_answer(entry, leaderless=True) is None
    assert wrong_admin_answer(probe("elect-unclean-led", [0, 3], version=1), leaderless=True) is not None
    assert wrong_admin_answer(probe("create-taken", [0, 83]), leaderless=True) is not None


def test_every_kind_the_fleet_sends_has_its_right_answer_here() -> None:
    assert set(ALL_KINDS) == {*EXPECTED, "delete-unknown"}


def test_an_accepted_probe_and_a_wrong_refusal_are_violations_a_right_one_and_not_controller_are_not(
    tmp_path: Path,
) -> None:
    journal: list[Entry] = [
        probe("elect-unknown-topic", [0, 0], accepted=True, topic="nope", partition=0),
        probe("create-replication-factor", [0, 39], topic="fleet-1-admin-probe-2"),
        probe("delete-unknown", [0, 3], version=3, by_id=False),
        probe("create-empty-replicas", [0, 41]),  # NOT_CONTROLLER judged nothing
        probe("elect-unknown-partition", [41], version=1),
        probe("create-taken", []),  # no answer
        probe("delete-unknown", [0, 29], version=4, by_id=False),  # the authorizer's, before the probe's rule
    ]
    result = checked_cluster(tmp_path, journal)
    assert rules(result) == ["probe-accepted", "probe-answer"]
    assert (result.counts["admin_probe"], result.counts["admin_probe_unauthorized"]) == (3, 1)
    accepted = next(v for v in result.violations if v.rule == "probe-accepted")
    assert "admin probe elect-unknown-topic (topic nope, partition 0)" in accepted.message
    answer = next(v for v in result.violations if v.rule == "probe-answer")
    assert "INVALID_REPLICATION_FACTOR (38)" in answer.message and answer.journal is not None


def test_a_taken_name_created_again_is_named_by_the_probe_and_seen_by_the_log_rules(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    again = log.batch(
        TopicRecord(name="t", topic_id=OTHER_TOPIC_ID),
        PartitionRecord(
            partition_id=0,
            topic_id=OTHER_TOPIC_ID,
            replicas=(1,),
            isr=(1,),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        ),
    )
    journal: list[Entry] = [probe("create-taken", [0, 0], version=7, accepted=True, topic="t", validate_only=False)]
    result = checked_cluster(tmp_path, journal, log)
    assert rules(result) == ["probe-accepted", "unknown-topic"]
    accepted = next(v for v in result.violations if v.rule == "probe-accepted")
    assert accepted.offset == again and f"TopicRecords of that name at offsets [9, {again}]" in accepted.message


def test_a_taken_name_answered_none_without_a_record_is_reported_as_nothing_written(tmp_path: Path) -> None:
    journal: list[Entry] = [probe("create-taken", [0, 0], version=4, accepted=True, topic="t", validate_only=False)]
    result = checked_cluster(tmp_path, journal)
    assert rules(result) == ["probe-accepted"]
    assert "nothing written (the log's TopicRecords of that name: [9])" in result.violations[0].message


def test_a_validate_only_probe_accepted_is_reported_without_looking_for_a_topic(tmp_path: Path) -> None:
    journal: list[Entry] = [probe("create-empty-replicas", [0, 0], accepted=True, topic="x", validate_only=True)]
    result = checked_cluster(tmp_path, journal)
    assert rules(result) == ["probe-accepted"] and result.violations[0].offset is None
    assert "TopicRecord" not in result.violations[0].message


def unclean_log(tmp_path: Path, *, stranded: bool = True) -> LogBuilder:
    """Partition t-0 (replicas 1, 2, 3) leaderless from about TIMESTAMP_MS + 100 to + 10,100 ms, its
    ISR shrunk to 2, led again by 2 after; `stranded`: its replicas fenced meanwhile (t-1 led by 4
    alone first), so that no replica could lead it; else every replica could."""
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    assert log.timestamp_ms == TIMESTAMP_MS + 100
    if stranded:
        log.change(1, leader=4, isr=(4,))
    log.change(0, leader=2, isr=(2,))
    log.change(0, leader=-1, isr=(2,))
    if stranded:
        for broker_id in (1, 2, 3):
            log.change_broker(broker_id, fenced=1)
    log.timestamp_ms += 10_000
    if stranded:
        log.change_broker(2, fenced=-1)
    log.change(0, leader=2, isr=(2,))
    return log


@pytest.mark.parametrize(
    ("at_ms", "errors", "accepted", "found"),
    [
        (5_000, [0, 0], True, ["unclean-answer"]),  # leaderless in flight, answered elected, and nobody led
        (5_000, [0, 83], False, []),  # leaderless, and no replica eligible
        (5_000, [0, 84], False, []),  # decided just before the leader was lost, or after it came back
        (10_400, [0, 0], True, []),  # within the slack of the leader's return
        (20_000, [0, 0], True, ["probe-accepted"]),  # led for seconds around the request
        (20_000, [0, 83], False, ["probe-answer"]),
        (20_000, [0, 84], False, []),
    ],
)
def test_an_unclean_election_is_right_only_for_a_partition_leaderless_while_in_flight(
    tmp_path: Path, at_ms: int, errors: list[int], accepted: bool, found: list[str]
) -> None:
    entry = probe("elect-unclean-led", errors, version=1, accepted=accepted, at_ms=at_ms, topic="t", partition=0)
    result = checked_cluster(tmp_path, [entry], unclean_log(tmp_path))
    assert rules(result) == found


def test_no_eligible_leader_is_wrong_while_a_replica_could_lead(tmp_path: Path) -> None:
    """Leaderless, but every replica registered, unfenced and online: the unclean election was owed."""
    entry = probe("elect-unclean-leaderless", [0, 83], version=1, accepted=False, at_ms=5_000, topic="t", partition=0)
    result = checked_cluster(tmp_path, [entry], unclean_log(tmp_path, stranded=False))
    assert rules(result) == ["probe-answer"]
    assert "a replica could lead for the whole flight" in result.violations[0].message
    assert result.counts["admin_probe"] == 1


def test_an_unclean_election_of_a_partition_the_log_never_held_is_unverifiable(tmp_path: Path) -> None:
    entry = probe("elect-unclean-led", [0, 0], version=2, accepted=True, topic="gone", partition=0)
    result = checked_cluster(tmp_path, [entry])
    assert rules(result) == [] and result.unverifiable["admin_probe"] == 1


def test_leaderless_between_reads_the_changes_in_log_order() -> None:
    transitions = [(100, False), (200, True), (300, False)]
    assert held_between(transitions, 150, 250)
    assert held_between(transitions, 210, 250)  # leaderless since before the window
    assert not held_between(transitions, 300, 400)
    assert not held_between(transitions, 0, 150)
    assert not held_between([], 0, 1_000)


def test_an_admin_probe_round_trips_and_stays_out_of_the_analytics_events() -> None:
    entry = probe("create-taken", [0, 36], version=7, topic="fleet-1-0", validate_only=False)
    line = json.loads(to_line(entry))
    assert from_object(line) == entry and entry.kind not in {"fault", "stale_replay", "fenced", "registered"}
    spark: dict[type, type] = {BooleanType: bool, DoubleType: float, IntegerType: int, LongType: int, StringType: str}
    schema = {field.name: type(field.dataType) for field in JOURNAL_FIELDS.fields}
    shared = [f.name for f in fields(entry) if f.name in schema]
    assert {"wall_ns", "api", "accepted"} <= set(shared)
    assert all(type(line[name]) is spark[schema[name]] for name in shared)
