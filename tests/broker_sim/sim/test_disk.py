"""The simulated disk: what a node's fsyncs made durable survives its machine's crash, the rest is cut,
torn or lost; a daemon that acknowledges what it never fsync'd is caught by the fleet's final check,
and the real one, killed the same way, loses nothing it acknowledged."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from broker_sim.sim.disk import SimDisk
from tests.e2e.daemon_process import ROOT


def write(path: Path, data: bytes, *, fsync: bool, disk: SimDisk) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            disk.fsync(fd)
    finally:
        os.close(fd)


def mounted(root: Path, seed: int, **present: bytes) -> SimDisk:
    """A disk at `root` as a node starts on it, with the files `present` there already."""
    root.mkdir()
    for name, data in present.items():
        (root / name).write_bytes(data)
    disk = SimDisk(root, random.Random(seed))
    disk.mounted()
    return disk


def test_what_was_fsynced_survives_and_the_unsynced_tail_is_cut_or_torn(tmp_path: Path) -> None:
    outcomes = set()
    for seed in range(40):
        root = tmp_path / str(seed)
        disk = mounted(root, seed, old=b"o" * 10)  # there when the node started: durable as it is
        write(root / "log", b"a" * 100, fsync=True, disk=disk)
        write(root / "log", b"b" * 50, fsync=False, disk=disk)
        write(root / "old", b"p" * 5, fsync=False, disk=disk)
        lost = disk.power_loss()
        log = (root / "log").read_bytes()
        assert log[:100] == b"a" * 100 and set(log[100:]) <= {ord("b")}  # a prefix of the unsynced bytes
        assert (root / "old").read_bytes()[:10] == b"o" * 10
        assert any(line.startswith("log: ") for line in lost)
        outcomes.add("cut" if len(log) == 100 else "torn")
    assert outcomes == {"cut", "torn"}


def test_a_file_never_fsynced_is_lost_or_torn_and_a_rename_keeps_what_was_durable(tmp_path: Path) -> None:
    outcomes = set()
    for seed in range(40):
        root = tmp_path / str(seed)
        disk = mounted(root, seed)
        write(root / "state.tmp", b"s" * 20, fsync=True, disk=disk)
        os.replace(root / "state.tmp", root / "state")  # as the node's runtime renames: durable under its new name
        disk.replaced(root / "state.tmp", root / "state")
        write(root / "new", b"n" * 30, fsync=False, disk=disk)
        disk.power_loss()
        assert (root / "state").read_bytes() == b"s" * 20
        new = root / "new"
        outcomes.add("gone" if not new.exists() else "torn")
        assert not new.exists() or set(new.read_bytes()) <= {ord("n")}
    assert outcomes == {"gone", "torn"}


def test_nothing_is_lost_when_everything_was_fsynced(tmp_path: Path) -> None:
    disk = mounted(tmp_path / "disk", 0)
    write(tmp_path / "disk" / "log", b"x" * 64, fsync=True, disk=disk)
    assert disk.power_loss() == []
    assert (tmp_path / "disk" / "log").read_bytes() == b"x" * 64


#: an all-nodes-killed seed whose kills crash machines (sim.log: "its machine crashed")
SEED = 8


def sim(*options: str, seed: int = SEED, scenario: str = "all-nodes-killed") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", str(seed)]
    command += ["--scenario", scenario, "--duration", "30", *options]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_log_that_never_fsyncs_loses_acknowledged_changes_when_machines_crash(tmp_path: Path) -> None:
    done = sim("--keep", str(tmp_path), "--patch", "tests.broker_sim.sim.planted:segments_never_fsynced")
    assert done.returncode == 1 and "[topic-lost]" in done.stdout, done.stdout + done.stderr
    assert "its machine crashed: __cluster_metadata-0" in (tmp_path / f"seed-{SEED}" / "sim.log").read_text()


def test_the_real_log_killed_the_same_way_loses_nothing(tmp_path: Path) -> None:
    done = sim("--keep", str(tmp_path))
    assert done.returncode == 0 and f"seed {SEED}: clean" in done.stdout, done.stdout + done.stderr
    assert "its machine crashed: everything was fsync'd" in (tmp_path / f"seed-{SEED}" / "sim.log").read_text()


def test_a_new_file_never_inherits_what_a_deleted_one_made_durable(tmp_path: Path) -> None:
    # the operating system hands a deleted file's inode to the next file as it likes: durability by
    # name keeps a seed's outcome the same wherever it runs
    for seed in range(20):
        root = tmp_path / str(seed)
        disk = mounted(root, seed)
        write(root / "00.log", b"d" * 40, fsync=True, disk=disk)
        (root / "00.log").unlink()
        write(root / "40.log", b"n" * 40, fsync=False, disk=disk)
        [line] = disk.power_loss()
        assert "(0 fsync'd)" in line or "gone" in line, line


def test_a_disk_that_fails_its_fsyncs_stops_the_daemon_and_the_quorum_goes_on(tmp_path: Path) -> None:
    # all-nodes-killed seed 833: node 2's disk fails (EIO) as it writes the election state of epoch 2;
    # the daemon's log failure is fatal (it exits, as the process would with status 1), the machine's
    # crash tears the quorum-state it never fsync'd, and it comes back in epoch 1, which is no regression:
    # it never acted in epoch 2
    done = sim("--keep", str(tmp_path), seed=833)
    assert done.returncode == 0 and "seed 833: clean" in done.stdout, done.stdout + done.stderr
    log = (tmp_path / "seed-833" / "sim.log").read_text()
    assert "node 2: its disk fails every fsync (EIO)" in log
    assert "node 2 exited: its log failed: cannot write SEED_DIR/quorum/node-2/__cluster_metadata-0/quorum-state" in log


def test_a_sole_voter_is_killed_and_its_quorum_recovers(tmp_path: Path) -> None:
    # the fleet's vote probes need another voter to stand as the candidate: a sole voter has none
    done = sim("--voters", "1", seed=1, scenario="controller-failover")
    assert done.returncode == 0 and "seed 1: clean" in done.stdout, done.stdout + done.stderr
