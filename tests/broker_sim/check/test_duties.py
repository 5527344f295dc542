"""The control duties judged on the brokers' side (`broker_sim.check.duties`): StopReplica(delete) to a
deleted topic's replicas, StopReplica(delete=false) after a controlled shutdown or an offline replica,
and the FULL LeaderAndIsr after a controller epoch begins or a broker is unfenced.

Logs are `LogBuilder.cluster()` (brokers 1-4 registered and unfenced, topic `t`: partition 0 on
[1, 2, 3], partition 1 on [2, 3, 4]) plus a few records, 10 ms apart from TIMESTAMP_MS on; each
journal entry is what a fleet's listener would have written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

from broker_sim.check import CheckResult, check
from broker_sim.check.liveness import crashed_incarnations, due_after_pauses
from broker_sim.journal import (
    Entry,
    FaultInjected,
    LeaderAndIsrObserved,
    Registered,
    RunEnded,
    RunStarted,
    StateObserved,
    StopObserved,
)
from protocol.error_codes import ErrorCode
from protocol.records.metadata import LOST_DIRECTORY, UNASSIGNED_DIRECTORY, RemoveTopicRecord

from .logs import TIMESTAMP_MS, TOPIC_ID, LogBuilder, rules

MS = 1_000_000
BOUND_MS = 30_000
LATER_MS = TIMESTAMP_MS + 1_000  # when the brokers journal what they were told (after every record)
END = RunEnded((TIMESTAMP_MS + 60_000) * MS, True)
REPLICAS = {0: (1, 2, 3), 1: (2, 3, 4)}
LOST, ONLINE = LOST_DIRECTORY, UNASSIGNED_DIRECTORY
Build = Callable[[LogBuilder], object]
DUTIES = ("delete-delivery", "stop-delivery", "full-state-delivery")


def run_started() -> RunStarted:
    return RunStarted(TIMESTAMP_MS * MS, 1, "chaos", 10, 0, 2000, 9000, BOUND_MS)


def full(
    broker: int, *, epoch: int = 1, version: int = 7, kind: int = 2, at_ms: int = LATER_MS
) -> LeaderAndIsrObserved:
    return LeaderAndIsrObserved(at_ms * MS, broker, 1, version, 1, epoch, kind, 2)


def stop(
    broker: int, partition: int, *, delete: bool, epoch: int, version: int = 3, at_ms: int = LATER_MS, error: int = 0
) -> StopObserved:
    return StopObserved(at_ms * MS, broker, 1, version, 1, "t", partition, epoch, delete, error)


def unfenced() -> list[Entry]:
    """The FULL LeaderAndIsr each broker of cluster() accepted after its unfence."""
    return [full(broker) for broker in (1, 2, 3, 4)]


def checked(tmp_path: Path, journal: Iterable[Entry], build: Build | None = None) -> CheckResult:
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    if build is not None:
        build(log)
    log.write()
    return check(tmp_path / "data", [run_started(), *journal, END])


def duties(result: CheckResult) -> list[str]:
    """The duties' violations (a test's log may break another rule on the way, e.g. a fence left in ISRs)."""
    return [rule for rule in rules(result) if rule in DUTIES]


# ------------------------------------------------------------------ delete-delivery
def delete(log: LogBuilder) -> None:
    log.batch(RemoveTopicRecord(topic_id=TOPIC_ID))


def deletions(but: tuple[int, int] | None = None, **fields: int) -> list[Entry]:
    """A StopReplica(delete=true, -2) of each partition of `t` at each of its replicas, except `but`."""
    options = {"epoch": -2, **fields}
    return [
        stop(broker, partition, delete=True, **options)
        for partition, replicas in REPLICAS.items()
        for broker in replicas
        if (broker, partition) != but
    ]


def test_a_deleted_topic_whose_replicas_were_all_told_is_clean(tmp_path: Path) -> None:
    result = checked(tmp_path, [*unfenced(), *deletions()], delete)
    assert result.violations == []
    assert result.counts["judged delete-delivery"] == 6
    # StopReplica v0-2 carry no leader epoch: their delete flag is enough
    assert checked(tmp_path / "v2", [*unfenced(), *deletions(epoch=-1, version=2)], delete).violations == []


def test_the_delivery_bound_counts_from_the_end_of_a_pause_and_defaults_to_the_shutdown_bound(
    tmp_path: Path,
) -> None:
    """A run's `delivery_bound_ms` (the simulator's) judges a stop owed late in the run that the
    shutdown bound would leave unjudged; a broker paused meanwhile owes it only a bound after its
    pause ended (a stopped process reads nothing), so a pause reaching past the run's end excuses it."""
    tight = dataclasses.replace(run_started(), delivery_bound_ms=5_000)
    assert (run_started().delivery_bound, tight.delivery_bound) == (BOUND_MS, 5_000)
    late_end = RunEnded((TIMESTAMP_MS + 20_000) * MS, True)  # before the shutdown bound's deadline

    def judged(journal: list[Entry], run: RunStarted) -> CheckResult:
        log = LogBuilder(tmp_path / f"data-{len(list(tmp_path.iterdir()))}")
        log.cluster()
        delete(log)
        log.write()
        return check(log.data_dir, [run, *unfenced(), *journal, late_end])

    assert duties(judged(deletions(but=(3, 1)), run_started())) == []  # the deadline lies past the run
    assert duties(judged(deletions(but=(3, 1)), tight)) == ["delete-delivery"]
    paused = FaultInjected(TIMESTAMP_MS * MS, 3, "pause", 18_000.0)  # until 2 s before the run ends
    assert duties(judged([paused, *deletions(but=(3, 1))], tight)) == []
    assert due_after_pauses([(100, 1_000), (1_200, 9_000)], 500, 1_000) == 10_000  # a pause, then another
    assert due_after_pauses([(100, 400)], 500, 1_000) == 1_500  # over before the duty began


def test_a_replica_of_a_deleted_topic_never_told_to_delete_it_is_reported(tmp_path: Path) -> None:
    result = checked(tmp_path, [*unfenced(), *deletions(but=(3, 1))], delete)
    assert rules(result) == ["delete-delivery"]
    violation = result.violations[0]
    assert violation.broker == 3 and violation.partition is not None and violation.partition.startswith("t-1")
    assert "StopReplica(delete=true, leader epoch -2)" in violation.message
    not_deleting = [*deletions(but=(3, 1)), stop(3, 1, delete=False, epoch=0)]
    assert rules(checked(tmp_path / "no-delete", [*unfenced(), *not_deleting], delete)) == ["delete-delivery"]
    wrong_epoch = [*deletions(but=(3, 1)), stop(3, 1, delete=True, epoch=0)]
    assert rules(checked(tmp_path / "epoch", [*unfenced(), *wrong_epoch], delete)) == ["delete-delivery"]
    before = [*deletions(but=(3, 1)), stop(3, 1, delete=True, epoch=-2, at_ms=TIMESTAMP_MS)]
    assert rules(checked(tmp_path / "before", [*unfenced(), *before], delete)) == ["delete-delivery"]
    late = [*deletions(but=(3, 1)), stop(3, 1, delete=True, epoch=-2, at_ms=TIMESTAMP_MS + BOUND_MS + 1_000)]
    assert rules(checked(tmp_path / "late", [*unfenced(), *late], delete)) == ["delete-delivery"]


def test_a_deletion_is_not_owed_by_an_incarnation_that_crashed_before_the_deadline(tmp_path: Path) -> None:
    """A controller may keep a crashed incarnation registered past the bound (each failover starts
    every session afresh, KAFKA-14392): nothing can reach it, and its next incarnation learns what
    it hosts from the full LeaderAndIsr at its unfence."""
    registered = Registered((TIMESTAMP_MS - 1_000) * MS, 3, "incarnation", 3)  # cluster(): broker 3's epoch is 3
    crash = FaultInjected(LATER_MS * MS, 3, "crash", 5_000.0)
    journal = [*unfenced(), *deletions(but=(3, 1)), registered, crash]
    assert duties(checked(tmp_path, journal, delete)) == []
    paused = FaultInjected(LATER_MS * MS, 3, "pause", 5_000.0)  # a paused broker is still there: it owes it
    journal = [*unfenced(), *deletions(but=(3, 1)), registered, paused]
    assert duties(checked(tmp_path / "paused", journal, delete)) == ["delete-delivery"]
    after = FaultInjected((TIMESTAMP_MS + BOUND_MS + 5_000) * MS, 3, "crash", 5_000.0)  # after the deadline
    journal = [*unfenced(), *deletions(but=(3, 1)), registered, after]
    assert duties(checked(tmp_path / "after", journal, delete)) == ["delete-delivery"]


def test_crashed_incarnations_are_each_broker_s_registered_one_at_its_crash() -> None:
    entries = [
        Registered(1_000 * MS, 1, "a", 10),
        FaultInjected(2_000 * MS, 1, "pause", 100.0),
        FaultInjected(3_000 * MS, 1, "crash", 100.0),
        FaultInjected(3_500 * MS, 1, "crash", 100.0),  # no incarnation registered since: nothing ends
        Registered(4_000 * MS, 1, "b", 20),
        FaultInjected(5_000 * MS, 2, "crash", 100.0),  # broker 2 never registered
    ]
    assert crashed_incarnations(entries) == {(1, 10): 3_000}


def test_a_deletion_is_not_owed_by_a_broker_fenced_then_or_since_nor_after_the_run(tmp_path: Path) -> None:
    journal = [*unfenced(), *deletions(but=(3, 1))]

    def fenced_before(log: LogBuilder) -> None:
        log.change_broker(3, fenced=1)
        delete(log)

    def fenced_after(log: LogBuilder) -> None:
        delete(log)
        log.change_broker(3, fenced=1)
        log.change_broker(3, fenced=-1)  # unfenced again by the deadline: its queue may have been dropped

    def replaced(log: LogBuilder) -> None:
        delete(log)
        log.register(3, 1)

    def shutting_down(log: LogBuilder) -> None:
        log.change_broker(3, in_controlled_shutdown=1)
        delete(log)
        log.change_broker(3, fenced=1)

    def new_controller_after(log: LogBuilder) -> None:
        delete(log)
        log.leader_change(2)  # its full LeaderAndIsr (v5+) deletes what it does not name; no old stops

    for name, build in [("before", fenced_before), ("after", fenced_after), ("replaced", replaced)]:
        assert duties(checked(tmp_path / name, journal, build)) == [], name
    told = [*journal, *(full(broker, epoch=2) for broker in (1, 2, 3, 4))]
    assert duties(checked(tmp_path / "controller", told, new_controller_after)) == []
    assert duties(checked(tmp_path / "shutdown", journal, shutting_down)) == []
    early_end = RunEnded((TIMESTAMP_MS + 5_000) * MS, True)
    log = LogBuilder(tmp_path / "end" / "data")
    log.cluster()
    delete(log)
    log.write()
    assert check(tmp_path / "end" / "data", [run_started(), *journal, early_end]).violations == []


def test_a_journal_without_the_duties_entries_is_not_held_to_them(tmp_path: Path) -> None:
    """An older fleet's journal (no LeaderAndIsrObserved at all): nothing owed, nothing judged."""
    result = checked(tmp_path, [], delete)
    assert result.violations == [] and not any(key.startswith("judged") for key in result.counts)


# ------------------------------------------------------------------ stop-delivery
def shutdown_3(log: LogBuilder) -> None:
    """Broker 3 in controlled shutdown: it leaves both ISRs (it leads neither)."""
    log.change_broker(3, in_controlled_shutdown=1)
    log.change(0, isr=(1, 2))
    log.change(1, isr=(2, 4))


def offline_4(log: LogBuilder) -> None:
    """Broker 4's replica of partition 1 goes offline: it leaves the ISR."""
    log.change(1, isr=(2, 3), directories=(ONLINE, ONLINE, LOST))


def test_stops_after_a_controlled_shutdown_or_an_offline_replica_are_clean(tmp_path: Path) -> None:
    stops = [stop(3, 0, delete=False, epoch=0), stop(3, 1, delete=False, epoch=0)]
    result = checked(tmp_path, [*unfenced(), *stops], shutdown_3)
    assert result.violations == [] and result.counts["judged stop-delivery"] == 2
    # refused by the broker for its newer leader epoch: still sent; and v0-2 carry no epoch
    refused = [stop(3, 0, delete=False, epoch=0, error=ErrorCode.FENCED_LEADER_EPOCH), stops[1]]
    assert checked(tmp_path / "refused", [*unfenced(), *refused], shutdown_3).violations == []
    old = [stop(3, 0, delete=False, epoch=-1, version=2), stops[1]]
    assert checked(tmp_path / "v2", [*unfenced(), *old], shutdown_3).violations == []
    result = checked(tmp_path / "offline", [*unfenced(), stop(4, 1, delete=False, epoch=0)], offline_4)
    assert result.violations == [] and result.counts["judged stop-delivery"] == 1


def test_a_replica_never_told_to_stop_is_reported(tmp_path: Path) -> None:
    result = checked(tmp_path, [*unfenced(), stop(3, 1, delete=False, epoch=0)], shutdown_3)
    assert rules(result) == ["stop-delivery"]
    violation = result.violations[0]
    assert violation.broker == 3 and violation.partition is not None and violation.partition.startswith("t-0")
    assert "after it left the ISR in controlled shutdown" in violation.message
    result = checked(tmp_path / "offline", unfenced(), offline_4)
    assert rules(result) == ["stop-delivery"] and "its replica went offline" in result.violations[0].message
    # v3+ without the partition's leader epoch (-1) is not the stop semantics.md names
    no_epoch = [stop(3, 0, delete=False, epoch=-1), stop(3, 1, delete=False, epoch=0)]
    assert rules(checked(tmp_path / "no-epoch", [*unfenced(), *no_epoch], shutdown_3)) == ["stop-delivery"]


def test_a_stop_is_not_owed_where_the_broker_was_not_in_the_isr_but_is_where_it_came_back_online(
    tmp_path: Path,
) -> None:
    def out_before(log: LogBuilder) -> None:
        log.change(0, isr=(1, 2))  # 3 left partition 0's ISR before its shutdown: only partition 1 is owed
        log.change_broker(3, in_controlled_shutdown=1)
        log.change(1, isr=(2, 4))

    assert checked(tmp_path, [*unfenced(), stop(3, 1, delete=False, epoch=0)], out_before).violations == []

    def back_online(log: LogBuilder) -> None:
        offline_4(log)
        log.change(1, directories=(ONLINE, ONLINE, ONLINE))

    # online again, and told so: the stop was owed all the same when it went offline
    newer = StateObserved(LATER_MS * MS, 4, 1, str(TOPIC_ID), 1, 2, 0, 2, [2, 3], [2, 3, 4])
    assert duties(checked(tmp_path / "online", [*unfenced(), newer], back_online)) == ["stop-delivery"]
    told = [*unfenced(), stop(4, 1, delete=False, epoch=0), newer]
    assert duties(checked(tmp_path / "told", told, back_online)) == []

    def deleted(log: LogBuilder) -> None:
        offline_4(log)
        delete(log)

    # the topic deleted meanwhile: the deletion's stop is owed instead (and delivers this one)
    assert duties(checked(tmp_path / "deleted", [*unfenced(), *deletions()], deleted)) == []


# ------------------------------------------------------------------ full-state-delivery
def new_controller(log: LogBuilder) -> None:
    log.leader_change(2)


def test_a_full_leader_and_isr_after_a_new_controller_epoch_is_clean(tmp_path: Path) -> None:
    journal = [*unfenced(), *(full(broker, epoch=2) for broker in (1, 2, 3, 4))]
    result = checked(tmp_path, journal, new_controller)
    assert result.violations == [] and result.counts["judged full-state-delivery"] == 8


def test_a_live_broker_without_a_full_leader_and_isr_is_reported(tmp_path: Path) -> None:
    journal = [*unfenced(), *(full(broker, epoch=2) for broker in (1, 2, 3))]
    result = checked(tmp_path, journal, new_controller)
    assert rules(result) == ["full-state-delivery"]
    assert result.violations[0].broker == 4 and "controller epoch 2 began" in result.violations[0].message
    incremental = [*journal, full(4, epoch=2, kind=1)]
    assert rules(checked(tmp_path / "incremental", incremental, new_controller)) == ["full-state-delivery"]
    older = [*journal, full(4, epoch=1, at_ms=LATER_MS + 1)]
    assert rules(checked(tmp_path / "older", older, new_controller)) == ["full-state-delivery"]
    # none after its unfence either
    assert rules(checked(tmp_path / "unfence", [full(1), full(2), full(3)])) == ["full-state-delivery"]


def test_a_broker_speaking_leader_and_isr_v0_4_meets_the_duty_with_any_of_the_epoch(tmp_path: Path) -> None:
    """v0-4 carry no type; the journal keeps their first of each epoch, which only the epoch's start can use."""
    journal = [*unfenced()[:3], full(4, version=4, kind=0), *(full(b, epoch=2) for b in (1, 2, 3))]
    assert rules(checked(tmp_path, journal, new_controller)) == ["full-state-delivery"]
    journal.append(full(4, epoch=2, version=4, kind=0))
    assert checked(tmp_path / "told", journal, new_controller).violations == []


def test_a_broker_fenced_or_replaced_after_the_new_epoch_is_excused(tmp_path: Path) -> None:
    journal = [*unfenced(), *(full(broker, epoch=2) for broker in (1, 2, 3))]

    def fenced(log: LogBuilder) -> None:
        new_controller(log)
        log.change_broker(4, fenced=1)

    def replaced(log: LogBuilder) -> None:
        new_controller(log)
        log.register(4, 1)

    assert duties(checked(tmp_path / "fenced", journal, fenced)) == []
    assert duties(checked(tmp_path / "replaced", journal, replaced)) == []
