"""The journal rules: what the controller told the fleet against what its log committed, and liveness.

Logs are `LogBuilder.cluster()` plus a few changes; each journal entry is what a fleet would have
written. Times: the builder's batches are stamped from TIMESTAMP_MS on, 10 ms apart.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from broker_sim.check import CheckResult, check
from broker_sim.journal import (
    BadAnswer,
    Entry,
    FaultInjected,
    Fenced,
    PartitionAcked,
    Registered,
    RunEnded,
    RunStarted,
    ShutdownTracked,
    StaleReplay,
    StateObserved,
    TopicCreated,
)

from .logs import TIMESTAMP_MS, TOPIC_ID, LogBuilder, incarnation, rules

T = str(TOPIC_ID)
MS = 1_000_000
START_NS = TIMESTAMP_MS * MS
BOUND_MS = 30_000


def run_started(**fields: int) -> RunStarted:
    settings = {"brokers": 10, "first_broker_id": 0, "heartbeat_ms": 2000, "session_timeout_ms": 9000}
    settings.update(fields)
    return RunStarted(START_NS, 1, "chaos", shutdown_bound_ms=BOUND_MS, **settings)  # type: ignore[arg-type]


def checked(tmp_path: Path, journal: list[Entry], build: object = None) -> tuple[CheckResult, LogBuilder]:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    if callable(build):
        build(log)
    log.write()
    return check(tmp_path / "data", journal), log


def ack(
    partition_epoch: int, isr: list[int], *, leader: int = 1, leader_epoch: int = 0, **fields: object
) -> PartitionAcked:
    values: dict[str, object] = {
        "broker_epoch": 1,
        "api_version": 2,
        "requested_isr": isr,
        "member_epochs": [],
    }
    values.update(fields)
    return PartitionAcked(
        START_NS, leader, topic_id=T, partition=0, leader=leader, leader_epoch=leader_epoch,
        partition_epoch=partition_epoch, isr=isr, **values,  # type: ignore[arg-type]
    )  # fmt: skip


def observed(
    broker: int, partition_epoch: int, leader: int, leader_epoch: int, isr: list[int], **fields: int
) -> StateObserved:
    return StateObserved(
        START_NS, broker, fields.get("controller_epoch", 1), T, 0, leader, leader_epoch, partition_epoch, isr, [1, 2, 3]
    )


def shrink(log: LogBuilder) -> None:
    log.change(0, isr=(1, 2))


# ------------------------------------------------------------------ acknowledged changes
def test_acknowledged_changes_found_in_the_log_are_clean(tmp_path: Path) -> None:
    result, _ = checked(
        tmp_path, [ack(1, [1, 2]), observed(2, 1, 1, 0, [1, 2]), observed(3, 0, 1, 0, [1, 2, 3])], shrink
    )
    assert result.ok and result.violations == []
    assert result.counts["journal_partition_acked"] == 1 and result.counts["journal_state_observed"] == 2


@pytest.mark.parametrize(
    ("entry", "offset"),
    [
        (ack(2, [1, 2]), None),  # a partition epoch the log never reached: lost
        (ack(1, [1, 3]), "change"),  # the log has another ISR at that epoch
        (ack(1, [1, 2], leader_epoch=1), "change"),
    ],
)
def test_an_acknowledged_change_missing_from_the_log_is_lost(tmp_path: Path, entry: Entry, offset: str | None) -> None:
    result, log = checked(tmp_path, [entry], shrink)
    assert rules(result) == ["ack-lost"] + (["ack-answer"] if entry.isr != entry.requested_isr else [])  # type: ignore[union-attr]
    lost = next(v for v in result.violations if v.rule == "ack-lost")
    assert lost.offset == (log.next_offset - 1 if offset else None)
    assert lost.journal is not None and "partition_acked" in lost.journal


def test_an_answer_other_than_the_request_is_reported(tmp_path: Path) -> None:
    result, _ = checked(tmp_path, [ack(1, [1, 2], requested_isr=[1, 2, 3])], shrink)
    assert rules(result) == ["ack-answer"]


def bounce_and_readmit(log: LogBuilder) -> None:
    """3 leaves the ISRs, is fenced, bounces (new epoch), rejoins partition 0 at partition epoch 2."""
    log.change(0, isr=(1, 2))
    log.change(1, isr=(2, 4))
    log.change_broker(3, fenced=1)
    log.register(3, generation=1)
    log.change_broker(3, fenced=-1)
    log.change(0, isr=(1, 2, 3))


def test_a_v3_member_added_with_another_broker_epoch_than_named_is_reported(tmp_path: Path) -> None:
    stale = ack(2, [1, 2, 3], api_version=3, member_epochs=[1, 2, 3])  # 3's old epoch was 3
    result, log = checked(tmp_path, [stale], bounce_and_readmit)
    assert rules(result) == ["ack-member-epoch"]
    assert result.violations[0].broker == 3 and result.violations[0].offset == log.next_offset - 1


def test_a_v3_no_op_resend_naming_a_later_registration_is_not_a_stale_member(tmp_path: Path) -> None:
    def build(log: LogBuilder) -> None:
        bounce_and_readmit(log)
        log.change(0, isr=(1, 2))
        log.change_broker(3, fenced=1)
        log.register(3, generation=2)  # a later incarnation, named by a no-op re-send of epoch 2's ISR
        log.change_broker(3, fenced=-1)

    log_probe = LogBuilder(tmp_path / "probe")
    log_probe.cluster()
    build(log_probe)
    later_epoch = log_probe.epochs[3]
    result, _ = checked(tmp_path, [ack(2, [1, 2, 3], api_version=3, member_epochs=[1, 2, later_epoch])], build)
    assert result.violations == []


# ------------------------------------------------------------------ observed states
@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([observed(2, 1, 1, 1, [1, 2])], ["observed-state"]),  # a leader epoch the log does not have
        ([observed(2, 1, 1, 0, [1, 2, 3])], ["observed-state"]),  # an ISR the log does not have
        ([observed(2, 5, 1, 0, [1, 2])], ["observed-state"]),  # never committed
        ([observed(2, 1, 1, 0, [1, 2], controller_epoch=7)], ["observed-controller-epoch"]),
        ([observed(2, 1, 1, 0, [1, 2]), observed(3, 1, 2, 0, [1, 2])], ["observed-state", "split-leadership"]),
    ],
)
def test_an_observed_state_other_than_the_committed_one_is_reported(
    tmp_path: Path, entries: list[Entry], expected: list[str]
) -> None:
    result, _ = checked(tmp_path, entries, shrink)
    assert rules(result) == expected


def test_a_state_sent_with_an_older_controller_epoch_than_committed_it_is_reported(tmp_path: Path) -> None:
    def build(log: LogBuilder) -> None:
        log.leader_change(2)
        shrink(log)

    result, _ = checked(tmp_path, [observed(2, 1, 1, 0, [1, 2], controller_epoch=1)], build)
    assert rules(result) == ["observed-controller-epoch"]


# ------------------------------------------------------------------ registrations and topics
def test_registrations_and_topics_are_found_in_the_log(tmp_path: Path) -> None:
    journal: list[Entry] = [
        Registered(START_NS, 2, str(incarnation(2)), 2),
        TopicCreated(START_NS, "t", T, 2, 3),
    ]
    result, _ = checked(tmp_path, journal)
    assert result.ok and result.counts["journal_registered"] == 1 and result.counts["journal_topic_created"] == 1


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        (Registered(START_NS, 2, str(incarnation(2)), 99), "registration-lost"),
        (Registered(START_NS, 2, str(incarnation(2, 5)), 2), "registration-lost"),
        # named LogDirs (v2+) its record does not keep (the cluster's records keep none)
        (Registered(START_NS, 2, str(incarnation(2)), 2, [str(incarnation(9))]), "registration-dirs"),
        (TopicCreated(START_NS, "t", str(incarnation(1)), 2, 3), "topic-lost"),
        (TopicCreated(START_NS, "t", T, 3, 3), "topic-lost"),
        (TopicCreated(START_NS, "t", T, 2, 2), "topic-lost"),
    ],
)
def test_an_acknowledged_registration_or_topic_missing_from_the_log_is_reported(
    tmp_path: Path, entry: Entry, rule: str
) -> None:
    result, _ = checked(tmp_path, [entry])
    assert rules(result) == [rule]


# ------------------------------------------------------------------ stale replays and bad answers
def stale(accepted: bool, errors: list[int], api: str = "ControlledShutdown", wall_ns: int = START_NS) -> StaleReplay:
    return StaleReplay(wall_ns, 4, api, 3, "previous-incarnation", 4, 40, 7, errors, accepted)


def test_an_accepted_stale_replay_is_a_violation_and_rejected_ones_are_not(tmp_path: Path) -> None:
    result, _ = checked(tmp_path, [stale(True, [0]), stale(False, [77]), stale(False, [])])
    assert rules(result) == ["stale-replay-accepted"]
    assert result.counts["journal_stale_replay"] == 3


def replay(reason: str, errors: list[int], api: str = "AlterPartition") -> StaleReplay:
    return StaleReplay(START_NS, 4, api, 2, reason, 4, 40, 7, errors, False)


@pytest.mark.parametrize(
    ("entry", "wrong"),
    [
        # a previous incarnation's request: the broker epoch check must fire, whatever the API
        (replay("previous-incarnation", [77]), False),
        (replay("previous-incarnation", [0, 74]), True),  # the broker epoch went unchecked
        (replay("previous-incarnation", [8], "ControlledShutdown"), True),
        (replay("previous-incarnation", [77], "BrokerHeartbeat"), False),
        (replay("previous-incarnation", [0, 95], "AlterReplicaState"), True),
        # a deposed leader's change: the leader epoch check (row c) fires before rows d and e
        (replay("old-leader-epoch", [0, 74, 74]), False),
        (replay("old-leader-epoch", [0, 42]), True),  # "not the leader": row c was skipped
        (replay("old-leader-epoch", [0, 95]), True),
        (replay("old-leader-epoch", [0, 100]), False),  # the topic is gone
        (replay("old-leader-epoch", [77]), False),  # the broker bounced since
        # an applied change again: its partition epoch (row e), or its leader epoch, is stale
        (replay("old-partition-epoch", [0, 95]), False),
        (replay("old-partition-epoch", [0, 74]), False),
        (replay("old-partition-epoch", [0, 107]), True),
        (replay("old-partition-epoch", [41]), True),
    ],
)
def test_a_stale_replay_rejected_by_the_wrong_check_is_reported(
    tmp_path: Path, entry: StaleReplay, wrong: bool
) -> None:
    result, _ = checked(tmp_path, [entry])
    assert rules(result) == (["stale-replay-answer"] if wrong else [])


def test_a_rejected_stale_shutdown_whose_flag_is_in_the_log_was_applied_all_the_same(tmp_path: Path) -> None:
    def build(log: LogBuilder) -> None:
        log.change(1, isr=(2, 3))
        log.change_broker(4, fenced=1)
        log.register(4, generation=1)  # the new incarnation, which the fleet never shuts down
        log.change_broker(4, fenced=-1)
        log.change_broker(4, in_controlled_shutdown=1)  # ... yet the log flags it

    probe = LogBuilder(tmp_path / "probe")
    probe.cluster()
    build(probe)
    replay = StaleReplay(
        probe.timestamp_ms * MS, 4, "ControlledShutdown", 3, "previous-incarnation", 3, probe.epochs[4], 9, [77], False
    )
    journal: list[Entry] = [run_started(), replay, RunEnded(probe.timestamp_ms * MS + 10 * MS, True)]
    result, _ = checked(tmp_path, journal, build)
    assert rules(result) == ["stale-replay-accepted"]
    assert result.violations[0].records and "in_controlled_shutdown=1" in result.violations[0].records[0]
    tracked = ShutdownTracked(4, probe.epochs[4], "heartbeat", probe.timestamp_ms * MS - 5 * MS, None, 1)
    result, _ = checked(tmp_path / "again", [*journal, tracked], build)
    assert result.violations == []  # the fleet did shut it down: the flag is its own


def test_a_bad_answer_is_a_violation(tmp_path: Path) -> None:
    result, _ = checked(tmp_path, [BadAnswer(START_NS, 1, "AlterPartition", 3, 12, "wrong correlation id 13")])
    assert rules(result) == ["bad-answer"]


# ------------------------------------------------------------------ liveness
def shutdown(broker: int, epoch: int, took_ms: int | None, start_ns: int = START_NS) -> ShutdownTracked:
    finished = None if took_ms is None else start_ns + took_ms * MS
    return ShutdownTracked(broker, epoch, "ControlledShutdown v3", start_ns, finished, 3)


def handed_over(log: LogBuilder) -> None:
    log.change_broker(1, in_controlled_shutdown=1)
    log.change(0, leader=2, isr=(2, 3))  # partition 0 to broker 2, broker 1 out of its ISR


def test_a_shutdown_within_the_bound_is_fine_and_a_late_one_with_a_successor_is_not(tmp_path: Path) -> None:
    end = RunEnded(START_NS + 100_000 * MS, True)
    result, _ = checked(tmp_path, [run_started(), shutdown(1, 1, 1_000), end], handed_over)
    assert result.violations == []
    result, _ = checked(tmp_path / "late", [run_started(), shutdown(1, 1, BOUND_MS + 5_000), end])
    # broker 1 still led partition 0, whose ISR had 2 and 3: late, and let go while still leading
    assert rules(result) == ["shutdown-bound", "shutdown-release"]
    assert all("t-0" in violation.message for violation in result.violations)


def test_a_shutdown_answered_complete_while_the_broker_still_leads_is_reported(tmp_path: Path) -> None:
    end = RunEnded(START_NS + 100_000 * MS, True)
    result, _ = checked(tmp_path, [run_started(), shutdown(1, 1, 1_000), end])  # partition 0 never moved
    assert rules(result) == ["shutdown-release"]
    assert "it still led t-0" in result.violations[0].message and result.violations[0].broker == 1
    result, _ = checked(tmp_path / "other", [run_started(), shutdown(1, 7, 1_000), end])
    assert result.violations == []  # not this incarnation's (epoch 7): another one was let go


def test_a_late_shutdown_is_excused_when_the_leadership_had_no_successor_or_the_fleet_interfered(
    tmp_path: Path,
) -> None:
    def stuck(log: LogBuilder) -> None:
        log.change_broker(1, in_controlled_shutdown=1)
        log.change(0, isr=(1,))  # nobody to hand partition 0 to

    end = RunEnded(START_NS + 100_000 * MS, True)
    result, _ = checked(tmp_path, [run_started(), shutdown(1, 1, None), end], stuck)
    assert result.violations == []
    crashed = FaultInjected(START_NS + 1_000 * MS, 1, "crash", 0.0)
    result, _ = checked(tmp_path / "crash", [run_started(), shutdown(1, 1, None), crashed, end])
    assert result.violations == []
    short_run = RunEnded(START_NS + 10_000 * MS, True)  # ended before the bound: not judged
    result, _ = checked(tmp_path / "short", [run_started(), shutdown(1, 1, None), short_run])
    assert result.violations == []


@pytest.mark.parametrize(("gap_ms", "rule"), [(12_000.0, "fleet-late-heartbeat"), (2_100.0, "live-broker-fenced")])
def test_an_unintended_fence_is_a_violation_named_for_whose_fault_it_was(
    tmp_path: Path, gap_ms: float, rule: str
) -> None:
    def fence_4(log: LogBuilder) -> None:
        log.change(1, isr=(2, 3))
        log.change_broker(4, fenced=1)

    journal: list[Entry] = [
        run_started(),
        Fenced(START_NS + 60_000 * MS, 4, 4, False, gap_ms),
        Fenced(START_NS, 3, 3, True, 20_000),
    ]
    result, _ = checked(tmp_path, journal, fence_4)
    assert rules(result) == [rule]
    assert result.violations[0].records and "fenced=1" in result.violations[0].records[0]


@pytest.mark.parametrize(("movable_after_ms", "late"), [(BOUND_MS - 3_000, False), (5_000, True)])
def test_a_successor_eligible_only_just_before_the_bound_does_not_make_the_shutdown_late(
    tmp_path: Path, movable_after_ms: int, late: bool
) -> None:
    """Stuck (ISR [1]) until 3 s before the bound, then movable: the next retry would have moved it.
    Movable a whole grace period before the bound, it is late."""
    flagged_ms = TIMESTAMP_MS + 1_000

    def build(log: LogBuilder) -> None:
        log.timestamp_ms = flagged_ms
        log.change_broker(1, in_controlled_shutdown=1)
        log.change(0, isr=(1,))
        log.timestamp_ms = flagged_ms + movable_after_ms
        log.change(0, isr=(1, 2))

    end = RunEnded((flagged_ms + 100_000) * MS, True)
    result, _ = checked(tmp_path, [run_started(), shutdown(1, 1, None, start_ns=flagged_ms * MS), end], build)
    assert rules(result) == (["shutdown-bound"] if late else [])


def test_entries_without_a_topic_id_are_unverifiable_not_violations(tmp_path: Path) -> None:
    nameless = StateObserved(START_NS, 2, 1, "00000000-0000-0000-0000-000000000000", 0, 1, 0, 1, [1, 2], [1, 2, 3])
    result, _ = checked(tmp_path, [nameless], shrink)
    assert result.ok and result.unverifiable == {"state_observed": 1}


# ------------------------------------------------------------------ silent brokers
FAULT_MS = TIMESTAMP_MS + 1_000
SESSION_MS = 9_000  # run_started()'s session timeout
SLACK_MS = 3_000  # a third of it: longer than 1 s and than its 2 s heartbeat interval
DEADLINE_MS = FAULT_MS + SESSION_MS + SLACK_MS


def silenced(kind: str = "pause", duration_ms: float = SESSION_MS + 4_000, broker: int = 4) -> FaultInjected:
    return FaultInjected(FAULT_MS * MS, broker, kind, duration_ms)


def fenced_at(at_ms: int, broker: int = 4) -> object:
    def build(log: LogBuilder) -> None:
        log.timestamp_ms = at_ms
        log.change(1, isr=(2, 3))
        log.change_broker(broker, fenced=1)

    return build


END = RunEnded((TIMESTAMP_MS + 100_000) * MS, True)


@pytest.mark.parametrize("kind", ["pause", "crash"])
def test_a_broker_silent_past_its_session_must_be_fenced_by_then(tmp_path: Path, kind: str) -> None:
    journal: list[Entry] = [run_started(), silenced(kind), END]
    result, _ = checked(tmp_path / "never", journal)
    assert rules(result) == ["silent-broker-unfenced"]
    violation = result.violations[0]
    assert violation.broker == 4 and f"silent since its {kind}" in violation.message
    assert violation.journal is not None and "fault" in violation.journal
    late, _ = checked(tmp_path / "late", journal, fenced_at(DEADLINE_MS + 500))
    assert rules(late) == ["silent-broker-unfenced"]
    in_time, _ = checked(tmp_path / "in-time", journal, fenced_at(DEADLINE_MS - 500))
    assert in_time.violations == []


def test_a_silence_is_not_held_to_the_session_when_it_cannot_be(tmp_path: Path) -> None:
    short = silenced(duration_ms=SESSION_MS + SLACK_MS - 500)  # over before the deadline: heartbeats resume
    assert checked(tmp_path / "short", [run_started(), short, END])[0].violations == []
    run_too_short = RunEnded((DEADLINE_MS - 100) * MS, True)
    assert checked(tmp_path / "run", [run_started(), silenced(), run_too_short])[0].violations == []
    other_faults = [FaultInjected(FAULT_MS * MS, 4, kind, 60_000.0) for kind in ("drop-connection", "disk-failure")]
    assert checked(tmp_path / "kinds", [run_started(), *other_faults, END])[0].violations == []


def test_a_silent_broker_already_fenced_replaced_or_met_by_a_new_controller_is_excused(tmp_path: Path) -> None:
    journal: list[Entry] = [run_started(), silenced(), END]

    def fenced_before(log: LogBuilder) -> None:
        fenced_at(FAULT_MS - 500)(log)
        log.timestamp_ms = DEADLINE_MS + 500
        log.change(0, isr=(1, 2))  # a later batch: the deadline is judged on the state before it

    def new_incarnation(log: LogBuilder) -> None:
        log.timestamp_ms = DEADLINE_MS - 500
        log.register(4, generation=1)

    def new_controller(log: LogBuilder) -> None:
        log.timestamp_ms = FAULT_MS + 2_000
        log.leader_change()
        log.timestamp_ms = DEADLINE_MS + 500
        log.change(0, isr=(1, 2))

    for name, build in [("fenced", fenced_before), ("replaced", new_incarnation), ("controller", new_controller)]:
        result, _ = checked(tmp_path / name, journal, build)
        assert result.violations == [], name


# ------------------------------------------------------------------ delivery of committed states
#: the ISR of each state the tests' logs commit: (partition, partition epoch) -> ISR
ISRS = {(0, 0): [1, 2, 3], (1, 0): [2, 3, 4], (0, 1): [1, 2], (0, 2): [1], (1, 1): [2, 4]}


def seen(broker: int, partition: int, partition_epoch: int, at_ms: int = TIMESTAMP_MS + 500) -> StateObserved:
    replicas = [1, 2, 3] if partition == 0 else [2, 3, 4]
    isr = ISRS[(partition, partition_epoch)]
    return StateObserved(at_ms * MS, broker, 1, T, partition, replicas[0], 0, partition_epoch, isr, replicas)


def shrink_twice(log: LogBuilder) -> None:
    shrink(log)
    log.change(0, isr=(1,))


def every_state_seen(*, but: tuple[int, int, int] | None = None) -> list[Entry]:
    """What the replicas of cluster() + shrink() observed: partitions 0 and 1 at epoch 0, then 0 at 1."""
    owed = [(b, 0, 0) for b in (1, 2, 3)] + [(b, 1, 0) for b in (2, 3, 4)] + [(b, 0, 1) for b in (1, 2, 3)]
    return [seen(*key) for key in owed if key != but]


def test_every_committed_state_reaching_every_active_replica_is_clean(tmp_path: Path) -> None:
    result, _ = checked(tmp_path, [run_started(), *every_state_seen(), END], shrink)
    assert result.violations == []


def test_a_state_that_never_reached_a_replica_is_reported(tmp_path: Path) -> None:
    result, _ = checked(tmp_path, [run_started(), *every_state_seen(but=(3, 0, 1)), END], shrink)
    assert rules(result) == ["control-delivery"]
    violation = result.violations[0]
    assert violation.broker == 3 and violation.partition is not None and violation.partition.startswith("t-0")
    assert "partition epoch 1 had not reached replica 3" in violation.message
    assert "the newest it had accepted was epoch 0" in violation.message
    too_late = [*every_state_seen(but=(3, 0, 1)), seen(3, 0, 1, at_ms=TIMESTAMP_MS + BOUND_MS + 1_000)]
    assert rules(checked(tmp_path / "late", [run_started(), *too_late, END], shrink)[0]) == ["control-delivery"]
    # a newer state delivers the older one (queued orders merge)
    merged = [*every_state_seen(but=(3, 0, 1)), *(seen(b, 0, 2) for b in (1, 2, 3))]
    assert checked(tmp_path / "merged", [run_started(), *merged, END], shrink_twice)[0].violations == []


def test_an_undelivered_state_is_excused_by_a_fence_or_the_end_of_the_run(tmp_path: Path) -> None:
    journal = every_state_seen(but=(3, 0, 1))
    early_end = RunEnded((TIMESTAMP_MS + 1_000) * MS, True)
    assert checked(tmp_path / "end", [run_started(), *journal, early_end], shrink)[0].violations == []
    # broker 3 accepted a state of a topic it knew by name only: it may have been this one
    unnamed = dataclasses.replace(seen(3, 0, 1), topic_id="00000000-0000-0000-0000-000000000000")
    result, _ = checked(tmp_path / "unnamed", [run_started(), *journal, unnamed, END], shrink)
    assert result.violations == [] and result.unverifiable == {"state_observed": 1}

    def fence_3(log: LogBuilder) -> None:
        shrink(log)
        log.change(1, isr=(2, 4))
        log.change_broker(3, fenced=1)

    fenced_journal = [*journal, seen(2, 1, 1), seen(4, 1, 1)]
    result, _ = checked(tmp_path / "fenced-in-log", [run_started(), *fenced_journal, END], fence_3)
    assert result.violations == []


def test_a_fleet_run_delivering_no_state_at_all_is_reported(tmp_path: Path) -> None:
    # a fleet that says its brokers journal every state they accept: none journalled is none delivered
    fleet_run = dataclasses.replace(run_started(), journals_states=True)
    result, _ = checked(tmp_path / "none", [fleet_run, END], shrink)
    assert rules(result) == ["control-delivery"] * 9  # 6 replicas of the creation, 3 of the shrink
    assert all("it had accepted none" in violation.message for violation in result.violations)
    assert checked(tmp_path / "all", [fleet_run, *every_state_seen(), END], shrink)[0].violations == []
    # a journal written before the field cannot tell: judged only if it holds an observation
    assert checked(tmp_path / "older", [run_started(), END], shrink)[0].violations == []
