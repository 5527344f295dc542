"""The checker catches bugs in a real controller: the controller core with one of its checks switched
off (monkeypatched), driven by the requests that a correct controller refuses, its batches written
to a real metadata log; the checker reads that log (and the acknowledgements) and names the rule.
The same steps against the unpatched core check clean."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker_sim.check import check
from broker_sim.journal import Entry, PartitionAcked, StaleReplay
from controller.ops import alter_partition, brokers
from protocol.error_codes import ErrorCode

from .logs import ControllerLog

INELIGIBLE = (ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED)


def admits_ineligible_members(monkeypatch: pytest.MonkeyPatch) -> None:
    original = alter_partition._check_partition

    def lax(*args: Any) -> ErrorCode:
        code = original(*args)
        return ErrorCode.NONE if code in INELIGIBLE else code

    monkeypatch.setattr(alter_partition, "_check_partition", lax)


def accepts_stale_partition_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    original = alter_partition._check_partition

    def lax(state: Any, requester: int, part: Any, request: Any, version: int) -> ErrorCode:
        if request.partition_epoch < part.partition_epoch:  # judged as if it were current
            request = dataclasses.replace(request, partition_epoch=part.partition_epoch)
        return original(state, requester, part, request, version)

    monkeypatch.setattr(alter_partition, "_check_partition", lax)


def fences_without_moving_leadership(monkeypatch: pytest.MonkeyPatch) -> None:
    original = brokers.removal

    def forgetful(*args: Any, **options: Any) -> Any:
        return original(*args, **options) if options else None  # fencing passes no options

    monkeypatch.setattr(brokers, "removal", forgetful)


def bumps_leader_epoch_on_isr_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    original = alter_partition.change_record

    def bumping(tp: Any, current: Any, **targets: Any) -> Any:
        change = original(tp, current, **targets)
        return None if change is None else dataclasses.replace(change, leader=current.leader)

    monkeypatch.setattr(alter_partition, "change_record", bumping)


def rejoin_while_fenced(controller: ControllerLog, journal: list[Entry]) -> None:
    """Broker 3 fenced by its session; the leaders ask to take it back into their ISRs."""
    h = controller.harness
    _expire(controller, 3)
    for index in range(3):
        part = h.partition("t", index)
        if 3 in part.replicas and 3 not in part.isr:
            h.alter_isr("t", index, [*part.isr, 3])


def stale_member_epoch(controller: ControllerLog, journal: list[Entry]) -> None:
    """Broker 3 bounces (new epoch, unfenced); a leader names 3's old epoch in a v3 expansion."""
    h = controller.harness
    old_epoch = h.epoch(3)
    _expire(controller, 3)
    h.register(3, generation=1)
    h.heartbeat(3)
    for index in range(3):
        part = h.partition("t", index)
        if 3 in part.replicas and 3 not in part.isr:
            isr = [*part.isr, 3]
            epochs = {b: h.epoch(b) for b in isr} | {3: old_epoch}
            response, _ = h.alter_isr("t", index, isr, version=3, member_epochs=epochs)
            answer = response.topics[0].partitions[0]
            if answer.error_code == 0:
                journal.append(
                    PartitionAcked(
                        0, part.leader, h.epoch(part.leader), 3, str(h.topic_id("t")), index, isr,
                        [epochs[b] for b in isr], answer.leader_id, answer.leader_epoch, answer.partition_epoch,
                        list(answer.isr),
                    )
                )  # fmt: skip


def stale_resend(controller: ControllerLog, journal: list[Entry]) -> None:
    """A leader shrinks an ISR, expands it back, then re-sends the shrink with its old partition epoch
    (a retry after a lost answer), journaled as the fleet does: accepted if answered NONE."""
    h = controller.harness
    part = h.partition("t", 0)
    h.alter_isr("t", 0, list(part.isr[:2]))
    shrunk = h.partition("t", 0)
    h.alter_isr("t", 0, list(part.isr))
    response, _ = h.alter_isr("t", 0, list(part.isr[:2]), partition_epoch=shrunk.partition_epoch - 1)
    errors = [response.error_code, response.topics[0].partitions[0].error_code]
    epoch = h.epoch(part.leader)
    journal.append(
        StaleReplay(
            0, part.leader, "AlterPartition", 2, "old-partition-epoch", epoch, epoch, 0, errors, not any(errors)
        )
    )


def fence_a_leader(controller: ControllerLog, journal: list[Entry]) -> None:
    _expire(controller, controller.harness.partition("t", 0).leader)


def shrink_isrs(controller: ControllerLog, journal: list[Entry]) -> None:
    h = controller.harness
    for index in range(3):
        h.alter_isr("t", index, list(h.partition("t", index).isr[:2]))


def _expire(controller: ControllerLog, broker_id: int) -> None:
    h = controller.harness
    h.advance(5_000, expire=False)
    for other in (1, 2, 3, 4):
        if other != broker_id and not h.core.state.cluster.brokers[other].fenced:
            h.heartbeat(other)
    h.advance(5_000)


CASES: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], Callable[[ControllerLog, list[Entry]], None], str]] = {
    "a fenced replica admitted to the ISR": (admits_ineligible_members, rejoin_while_fenced, "isr-admission"),
    "a stale member broker epoch accepted": (admits_ineligible_members, stale_member_epoch, "ack-member-epoch"),
    "a stale partition epoch accepted": (accepts_stale_partition_epochs, stale_resend, "stale-replay-accepted"),
    "a leader fenced without moving its leadership": (
        fences_without_moving_leadership,
        fence_a_leader,
        "fenced-leader",
    ),
    "the leader epoch bumped on an ISR change": (bumps_leader_epoch_on_isr_changes, shrink_isrs, "leader-epoch"),
}


def run_case(data_dir: Path, steps: Callable[[ControllerLog, list[Entry]], None]) -> tuple[list[str], bool]:
    controller = ControllerLog(data_dir)
    h = controller.harness
    for broker_id in (1, 2, 3, 4):
        h.register(broker_id)
    for broker_id in (1, 2, 3, 4):
        h.heartbeat(broker_id)
    h.create_topic("t", 3, 3)
    journal: list[Entry] = []
    steps(controller, journal)
    controller.close()
    result = check(data_dir, journal)
    return sorted(set(result.violation_counts)), result.ok


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_controller_with_a_check_switched_off_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    breaks, steps, rule = CASES[case]
    assert run_case(tmp_path / "correct", steps) == ([], True)  # the same requests, a correct controller
    breaks(monkeypatch)
    rules, ok = run_case(tmp_path / "broken", steps)
    assert rule in rules and not ok
