"""The journal rules for probes: a request probe the controller accepted, or refused with
another error than semantics.md names for its kind and version; and the refusals of a leader's ISR
expansion on a stale view (Probe entries), whose acceptance stays the log's to judge."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType

from analytics.journal import JOURNAL_FIELDS
from broker_sim.check import CheckResult, check
from broker_sim.check.probe_answers import wrong_isr_probe_answer, wrong_probe_answer
from broker_sim.journal import Entry, Probe, RequestProbe, from_object, to_line
from protocol.error_codes import ErrorCode as E

from .logs import TIMESTAMP_MS, TOPIC_ID, LogBuilder, checked_cluster, incarnation, rules

START_NS = TIMESTAMP_MS * 1_000_000
API = {
    "replica-state-unregistered": "AlterReplicaState",
    "heartbeat-unregistered": "BrokerHeartbeat",
    "shutdown-unregistered": "ControlledShutdown",
    "registration-cluster-id": "BrokerRegistration",
    "registration-negative-id": "BrokerRegistration",
    "replica-state-unknown-state": "AlterReplicaState",
    "replica-state-unknown-topic": "AlterReplicaState",
    "replica-state-no-op": "AlterReplicaState",
    "registration-duplicate": "BrokerRegistration",
}


def probe(kind: str, errors: list[int], version: int = 2, accepted: bool = False, **detail: object) -> RequestProbe:
    return RequestProbe(START_NS, 1, 4, API.get(kind, "AlterPartition"), version, kind, errors, accepted, detail)


@pytest.mark.parametrize(
    ("entry", "right"),
    [
        # row d: a follower on the epochs its listener showed; a newer leader epoch fires row c
        # (also when the follower leads now); a newer partition epoch alone never passes row d
        (probe("follower", [0, 42]), True),
        (probe("follower", [0, 74]), True),
        (probe("follower", [0, 95]), False),  # rows d and e swapped
        (probe("follower", [0, 100]), True),  # the topic was deleted since
        (probe("follower", [0, 107]), False),  # judged as the leader's change: row d skipped
        (probe("follower", [0, 55], version=1), False),
        (probe("follower", [77]), False),  # its own broker epoch was current
        # rows f and g, and a LeaderRecoveryState byte other than 0 and 1
        (probe("non-replica", [0, 42]), True),
        (probe("non-replica", [0, 107]), False),  # the stranger reached the eligibility check
        (probe("duplicate", [0, 42]), True),
        (probe("negative-id", [0, 42]), True),
        (probe("without-leader", [0, 95]), True),
        (probe("recovery-rollback", [0, 42], version=1), True),
        (probe("recovering-isr", [0, 107]), False),
        (probe("recovery-byte", [0, 42]), True),
        (probe("recovery-byte", []), True),  # no answer: nothing to judge
        # an unknown topic: by id from v2, by name before
        (probe("unknown-topic", [0, 100], version=2), True),
        (probe("unknown-topic", [0, 3], version=2), False),
        (probe("unknown-topic", [0, 3], version=1), True),
        (probe("unknown-topic", [0, 100], version=0), False),
        (probe("unknown-topic", [0]), False),  # the partition is missing from the answer
        (probe("unknown-partition", [0, 3]), True),
        (probe("unknown-partition", [0, 100], version=3), True),  # the topic was deleted since
        (probe("unknown-partition", [0, 42]), False),
        # brokers: one right answer each
        (probe("heartbeat-unregistered", [77], version=1), True),
        (probe("heartbeat-unregistered", [8], version=1), False),
        (probe("shutdown-unregistered", [8], version=3), True),
        (probe("shutdown-unregistered", [77], version=3), False),  # the epoch checked before registration
        (probe("registration-cluster-id", [104]), True),
        (probe("registration-cluster-id", [101]), False),
        (probe("registration-negative-id", [42]), True),
        (probe("alter-partition-unregistered", [77], version=0), True),
        (probe("alter-partition-unregistered", [0, 42], version=3), False),  # decided past the broker check
        (probe("replica-state-unregistered", [77], version=0), True),
        (probe("replica-state-unregistered", [0, 3], version=1), False),
        (probe("replica-state-unknown-state", [1000], version=1), True),
        (probe("replica-state-unknown-state", [77], version=1), False),
        (probe("replica-state-unknown-topic", [0, 100], version=1), True),
        (probe("replica-state-unknown-topic", [0, 3], version=0), True),
        (probe("replica-state-unknown-topic", [0, 3], version=1), False),
        (probe("replica-state-unknown-partition", [0, 3], version=1), True),
        (probe("replica-state-unknown-partition", [0, 100], version=1), True),  # the topic was deleted since
        (probe("replica-state-unknown-partition", [0, 100], version=0), False),
        (probe("replica-state-unknown-partition", [0, 0], version=0, accepted=True), True),  # probe-accepted's
        # one partition named twice: the second naming is refused, the first changes nothing
        (probe("partition-twice", [0, 0, 42]), True),
        (probe("partition-twice", [0, 74, 42]), True),
        (probe("partition-twice", [0, 100, 100]), True),
        (probe("partition-twice", [0, 0, 95]), False),  # the second naming decided as a change
        (probe("partition-twice", [0, 42]), False),
        # named 7 times (more than a small record cap: decided piece by piece), in one topic entry
        (probe("partition-twice", [0, 0, *[42] * 6], times_named=7, answer_topics=1), True),
        (probe("partition-twice", [0, 0, 42], times_named=7, answer_topics=1), False),  # namings lost
        (probe("partition-twice", [0, 0, *[42] * 5, 0], times_named=7, answer_topics=1), False),
        (probe("partition-twice", [0, 0, *[42] * 6], times_named=7, answer_topics=2), False),  # the topic cut
        (probe("a-later-fleets-kind", [0, 12]), True),  # a kind this checker does not know
        # an empty AlterPartition: an empty success, at every version
        (probe("alter-partition-empty", [0], version=0, answer_topics=0), True),
        (probe("alter-partition-empty", [0], version=3, answer_topics=1), False),  # a topic in the answer
        (probe("alter-partition-empty", [0, 3], answer_topics=1), False),
        (probe("alter-partition-empty", [77], version=1, answer_topics=0), False),  # step 3 before step 2
        # row b: epochs above the controller's: that partition NOT_CONTROLLER, whatever else is true
        (probe("alter-partition-newer-epoch", [0, 41], version=0), True),
        (probe("alter-partition-newer-epoch", [0, 100], version=3), True),  # the topic was deleted since
        (probe("alter-partition-newer-epoch", [0, 74]), False),  # row c before row b
        (probe("alter-partition-newer-epoch", [0, 95]), False),
        (probe("alter-partition-newer-epoch", [0, 42]), False),
        # a duplicate registration (an acceptance is the log's to judge: probe-accepted)
        (probe("registration-duplicate", [101], version=0), True),
        (probe("registration-duplicate", [104], version=3), False),
        (probe("registration-duplicate", [42], version=2), False),
        # a replica state it is already in: NONE, or the deleted topic's error
        (probe("replica-state-no-op", [0, 0], version=0), True),
        (probe("replica-state-no-op", [0, 100], version=1), True),
        (probe("replica-state-no-op", [0, 42], version=1), False),
        (probe("replica-state-no-op", [77], version=1), False),
    ],
)
def test_a_probe_must_be_refused_with_the_error_its_kind_and_version_name(entry: RequestProbe, right: bool) -> None:
    assert (wrong_probe_answer(entry) is None) == right


def test_an_accepted_probe_and_a_wrong_refusal_are_violations_a_right_one_and_not_controller_are_not(
    tmp_path: Path,
) -> None:
    journal: list[Entry] = [
        probe("follower", [0, 0], accepted=True),
        probe("non-replica", [0, 107]),
        probe("duplicate", [0, 42]),
        probe("non-replica", [0, 41]),  # NOT_CONTROLLER judged nothing
        probe("heartbeat-unregistered", []),  # no answer
    ]
    result = checked_cluster(tmp_path, journal)
    assert rules(result) == ["probe-accepted", "probe-answer"]
    assert result.counts["journal_request_probe"] == 3
    accepted = next(v for v in result.violations if v.rule == "probe-accepted")
    assert "probe follower" in accepted.message and accepted.broker == 1


def isr_probe(errors: list[int], version: int) -> Probe:
    return Probe(START_NS, 1, version, "fenced", str(TOPIC_ID), 0, 3, 7, errors)


@pytest.mark.parametrize(
    ("version", "errors", "right"),
    [
        (3, [0, 107], True),
        (2, [0, 107], True),
        (1, [0, 55], True),
        (0, [0, 107], False),  # v0-1 name no INELIGIBLE_REPLICA
        (2, [0, 55], False),
        (3, [0, 0], True),  # admitted: the log judges it (isr-admission)
        (3, [0, 74], True),
        (3, [0, 95], True),
        (3, [0, 42], False),
        (3, [77], False),
    ],
)
def test_a_refused_isr_expansion_names_the_ineligible_error_of_its_version(
    version: int, errors: list[int], right: bool
) -> None:
    assert (wrong_isr_probe_answer(version, errors) is None) == right


def test_a_wrong_refusal_of_an_isr_expansion_is_reported(tmp_path: Path) -> None:
    journal: list[Entry] = [isr_probe([0, 107], 0), isr_probe([0, 55], 0), isr_probe([0, 41], 0), isr_probe([], 3)]
    result = checked_cluster(tmp_path, journal)
    assert rules(result) == ["probe-answer"]
    assert result.counts["journal_probe"] == 2
    assert str(int(E.INELIGIBLE_REPLICA)) in result.violations[0].message


def test_a_request_probe_round_trips_and_stays_out_of_the_analytics_events() -> None:
    """analytics reads journals with a fixed Spark schema: the fields a probe shares with it keep its
    types, and the kind is none of those it turns into events."""
    entry = RequestProbe(START_NS, 1, 4, "AlterPartition", 3, "follower", [0, 42], False, {"isr": [1, 2]})
    line = json.loads(to_line(entry))
    assert from_object(line) == entry and entry.kind not in {"fault", "stale_replay", "fenced", "registered"}
    spark: dict[type, type] = {BooleanType: bool, DoubleType: float, IntegerType: int, LongType: int, StringType: str}
    schema = {field.name: type(field.dataType) for field in JOURNAL_FIELDS.fields}
    shared = [f.name for f in fields(entry) if f.name in schema]
    assert {"wall_ns", "broker", "broker_epoch", "api", "accepted"} <= set(shared)
    assert all(type(line[name]) is spark[schema[name]] for name in shared)


def test_row_bs_partition_not_controller_is_judged_and_its_acceptance_reported(tmp_path: Path) -> None:
    journal: list[Entry] = [
        probe("alter-partition-newer-epoch", [0, 41]),  # right: judged
        probe("alter-partition-newer-epoch", [41]),  # a standby: judged nothing
        probe("alter-partition-newer-epoch", [0, 0], accepted=True),  # row b off
        probe("alter-partition-newer-epoch", [0, 42]),
        probe("non-replica", [0, 41]),  # another kind: NOT_CONTROLLER anywhere judged nothing
        probe("alter-partition-empty", [0], answer_topics=0),
        probe("replica-state-no-op", [0, 0], version=1),
    ]
    result = checked_cluster(tmp_path, journal)
    assert rules(result) == ["probe-accepted", "probe-answer"]
    assert result.counts["journal_request_probe"] == 5


def duplicate(wall_ms: int, after_ms: int, broker_epoch: int) -> RequestProbe:
    detail = {"incarnation_id": str(incarnation(5, 1)), "answered_ms_after_heard": after_ms, "session_timeout_ms": 3000}
    return RequestProbe(
        wall_ms * 1_000_000, 5, broker_epoch, "BrokerRegistration", 1, "registration-duplicate", [0], True, detail
    )


def duplicate_checked(tmp_path: Path, fence_before_ms: int | None, after_ms: int = 500) -> CheckResult:
    """Broker 5 (in no partition) registered and unfenced; `fence_before_ms` before the probe's answer
    its epoch is fenced (None: never), then the probe's incarnation registered, answered 100 ms later."""
    log = LogBuilder(tmp_path / "data")
    log.cluster((1, 2, 3, 4, 5))
    epoch = log.epochs[5]
    answered_ms = log.timestamp_ms + 60_000
    if fence_before_ms is not None:
        log.timestamp_ms = answered_ms - fence_before_ms
        log.change_broker(5, fenced=1)
    log.timestamp_ms = answered_ms - 100
    log.register(5, 1)
    log.write()
    return check(tmp_path / "data", [duplicate(answered_ms, after_ms, epoch)])


@pytest.mark.parametrize(
    ("fence_before_ms", "after_ms", "violation"),
    [
        (None, 500, True),  # unfenced, heard 500 ms before the answer: the current session was valid
        (300, 500, False),  # fenced after the heartbeat: the controller may register another incarnation
        (2_000, 500, True),  # a fence before that heartbeat was undone by it
        (None, 3_000, False),  # answered a session timeout after the heartbeat: unverifiable
    ],
)
def test_an_accepted_duplicate_registration_is_judged_by_the_log(
    tmp_path: Path, fence_before_ms: int | None, after_ms: int, violation: bool
) -> None:
    result = duplicate_checked(tmp_path, fence_before_ms, after_ms)
    assert rules(result) == (["probe-accepted"] if violation else [])
    if violation:
        assert "session was valid" in result.violations[0].message and result.violations[0].broker == 5
    assert result.counts.get("journal_request_probe", 0) == (0 if after_ms >= 3000 else 1)
