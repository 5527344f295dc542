"""Kafka's Raft invariants as the simulation holds them (`broker_sim.sim.raft_watch`), step by step on
hand-made cores; then on the real quorum with planted Raft bugs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker_sim.sim.raft_watch import RaftWatch, epoch_at
from controller.raft import Batch, Epoch, InstallSnapshot, LogView, NodeId, OffsetAndEpoch
from controller.raft.leader import Leader
from controller.raft.state import Follower, Unattached

VOTERS = (1, 2, 3)


def log_of(*epochs: int, start: int = 0) -> LogView:
    """A log of one-record batches from `start`, the n-th of epoch `epochs[n]`."""
    view = LogView(start, start, start, (), OffsetAndEpoch(start, Epoch(epochs[0])) if start else None)
    for offset, epoch in enumerate(epochs, start):
        view = view.appended((Batch(offset, offset, Epoch(epoch), None),))
    return view


def leader(node: int, epoch: int, log: LogView, high_watermark: int | None) -> Any:
    state = Leader.started(Epoch(epoch), NodeId(node), frozenset(map(NodeId, VOTERS)), 0, frozenset(), 0, 2000)
    return SimpleNamespace(
        node_id=node, state=state, epoch=epoch, leader_id=node, log=log, high_watermark=high_watermark
    )


def follower(node: int, epoch: int, leader_id: int | None, log: LogView, high_watermark: int | None = None) -> Any:
    if leader_id is None:
        state: Any = Unattached(Epoch(epoch), None, None, None)
    else:
        state = Follower(Epoch(epoch), NodeId(leader_id), None, 0)
    return SimpleNamespace(
        node_id=node, state=state, epoch=epoch, leader_id=leader_id, log=log, high_watermark=high_watermark
    )


def rules(watch: RaftWatch) -> list[str]:
    return [line.split("]")[0].lstrip("[") for line in watch.violations]


def watch(relaxed: bool = False) -> RaftWatch:
    return RaftWatch(VOTERS, lambda: 1.5, relaxed=relaxed)


def test_epoch_at_reads_the_epoch_runs() -> None:
    view = log_of(1, 1, 2, 4, 4)
    assert [epoch_at(view, offset) for offset in range(6)] == [1, 1, 2, 4, 4, None]
    assert epoch_at(log_of(3, 3, start=10), 9) is None  # in the snapshot


def test_a_replicated_run_is_clean() -> None:
    w = watch()
    log = log_of(1, 1, 1)
    w.step(follower(2, 1, 1, log), [])
    w.step(follower(3, 1, 1, log_of(1, 1)), [])
    w.step(leader(1, 1, log, 3), [])  # 3 is in the logs of 1 and 2: a majority
    w.step(follower(2, 1, 1, log, 3), [])
    assert w.violations == [] and w.committed_end == 3 and w.leader() == (1, 1)


def test_an_epoch_that_goes_back_is_reported_unless_relaxed() -> None:
    for relaxed, expected in ((False, ["raft-monotonic-epoch"]), (True, [])):
        w = watch(relaxed)
        w.step(follower(2, 5, None, log_of(1)), [])
        w.down(2)
        w.step(follower(2, 4, None, log_of(1)), [])  # restarted with an older quorum-state
        assert rules(w) == expected


def test_an_epoch_taken_while_the_disk_failed_may_die_with_the_incarnation() -> None:
    w = watch()
    w.step(follower(2, 4, None, log_of(1)), [])
    w.disk_failing(2)  # from here its election state may not be written: epoch 5 never was
    w.step(follower(2, 5, None, log_of(1)), [])
    w.down(2)
    w.step(follower(2, 4, None, log_of(1)), [])  # restarted from the quorum-state of epoch 4
    assert w.violations == []
    w.down(2)
    w.step(follower(2, 3, None, log_of(1)), [])  # below what it had when its disk failed: a regression
    assert rules(w) == ["raft-monotonic-epoch"]


def test_two_leaders_of_one_epoch_are_reported() -> None:
    w = watch()
    w.step(follower(3, 2, 1, log_of(1)), [])
    w.step(leader(2, 2, log_of(1), None), [])
    assert rules(w) == ["raft-single-leader"]


def test_a_high_watermark_beyond_a_majority_is_reported() -> None:
    w = watch()
    w.step(follower(2, 1, 1, log_of(1)), [])
    w.step(follower(3, 1, 1, log_of(1)), [])
    w.step(leader(1, 1, log_of(1, 1, 1), 3), [])
    assert rules(w) == ["raft-majority-reached-high-watermark"]
    relaxed = watch(relaxed=True)
    relaxed.step(leader(1, 1, log_of(1, 1, 1), 3), [])
    assert relaxed.violations == []


def test_a_high_watermark_that_goes_back_is_reported() -> None:
    w = watch()
    for node in VOTERS:
        w.step(follower(node, 1, 1, log_of(1, 1, 1)), [])
    w.step(leader(1, 1, log_of(1, 1, 1), 3), [])
    w.step(leader(2, 2, log_of(1, 1, 1), 2), [])
    assert "raft-monotonic-high-watermark" in rules(w)


def test_a_leader_without_a_committed_entry_and_a_truncation_below_the_high_watermark() -> None:
    w = watch()
    for node in VOTERS:
        w.step(follower(node, 1, 1, log_of(1, 1, 1), 3 if node != 1 else None), [])
    w.step(leader(1, 1, log_of(1, 1, 1), 3), [])
    w.step(leader(3, 2, log_of(1, 1, 2), None), [])  # its offset 2 is of epoch 2, committed of 1
    assert rules(w) == ["raft-committed-entry-kept"]
    w = watch()
    for node in VOTERS:
        w.step(follower(node, 1, 1, log_of(1, 1, 1)), [])
    w.step(leader(1, 1, log_of(1, 1, 1), 3), [])
    w.step(follower(2, 1, 1, log_of(1, 1, 1), 3), [])
    w.step(follower(2, 1, 1, log_of(1, 1), 3), [])  # truncated below its own high watermark
    assert rules(w) == ["raft-committed-entry-kept"]


def test_a_follower_may_hold_a_divergent_entry_above_its_high_watermark() -> None:
    w = watch()
    for node in (1, 3):
        w.step(follower(node, 2, 1, log_of(1, 2, 2)), [])
    w.step(follower(2, 2, 1, log_of(1, 1, 1)), [])  # a deposed leader's tail, not yet truncated
    w.step(leader(1, 2, log_of(1, 2, 2), 3), [])
    w.step(follower(2, 2, 1, log_of(1, 1, 1), 1), [])
    assert w.violations == []


def test_a_leader_installing_a_snapshot_is_reported() -> None:
    w = watch()
    w.step(leader(1, 1, log_of(1), None), [InstallSnapshot(OffsetAndEpoch(5, Epoch(1)), None)])
    assert rules(w) == ["raft-leader-never-loads-snapshot"]


ROOT = Path(__file__).resolve().parents[3]


def sim(scenario: str, seed: int, patch: str, duration_s: int = 20) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", str(seed)]
    command += [
        "--scenario",
        scenario,
        "--duration",
        str(duration_s),
        "--patch",
        f"tests.broker_sim.sim.planted:{patch}",
    ]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_planted_raft_bugs_break_kafkas_invariants() -> None:
    """A leader that commits on its own log alone, and a voter that votes twice in an epoch: the
    fleet's final check of the logs may or may not see them; the invariants, step by step, do."""
    alone = sim("leader-failure", 1, "high_watermark_of_the_leader_alone")
    assert alone.returncode == 1 and "[raft-majority-reached-high-watermark]" in alone.stdout, alone.stdout
    twice = sim("leader-failure", 40, "vote_granted_twice")  # 9 of 160 seeds meet a split vote (pre-votes first)
    assert twice.returncode == 1 and "[raft-single-leader]" in twice.stdout, twice.stdout


def test_planted_durability_and_log_comparison_bugs_break_them_under_overlapping_faults() -> None:
    """A voter whose election is never persisted (restarted, its epoch goes back to its log's), and
    one that votes whatever the candidate's log (a node healed behind wins as the leader dies, and
    truncates committed entries): Kafka's seven scripts reach neither; overlapping faults do."""
    forgotten = sim("overlapping-faults", 1, "election_not_persisted", 25)  # 5 of seeds 0-19
    assert forgotten.returncode == 1 and "[raft-monotonic-epoch]" in forgotten.stdout, forgotten.stdout
    stale = sim("overlapping-faults", 8, "vote_for_a_stale_log", 25)  # 7 of seeds 0-39
    assert stale.returncode == 1 and "[raft-committed-entry-kept]" in stale.stdout, stale.stdout
