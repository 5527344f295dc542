"""Unclean elections asked for under simulation: the fleet's admin asks for one whenever its brokers
last heard of a leaderless partition (`elect-unclean-leaderless`), and the checker holds the answer and
the election to Kafka's rules (the first eligible replica, the ISR that replica alone, RECOVERING,
then RECOVERED once the new leader says so); planted bugs in the election are each named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from broker_sim.sim.cluster import NodeSettings
from controller.log.reading import read_entries
from protocol.records.metadata import PartitionChangeRecord
from tests.e2e.daemon_process import ROOT

#: a chaos seed whose run meets a leaderless partition and elects uncleanly, on a small log whose
#: retention deletes every node's first segment (4 of seeds 0-119 do both)
SEED = 3


@pytest.fixture(scope="module")
def chaos_seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The seed as its replay command runs it (a forked child, the hash seed fixed: in this process
    the order of sets of objects would run it otherwise); its files and the command's outcome."""
    directory = tmp_path_factory.mktemp("chaos")
    done = sim(SEED, "--keep", str(directory))
    return directory / f"seed-{SEED}", done


def test_a_leaderless_partition_is_elected_uncleanly_and_recovers(
    chaos_seed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    tmp_path, done = chaos_seed
    assert done.returncode == 0, done.stdout + done.stderr
    entries = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    asked = [e for e in entries if e.get("probe") == "elect-unclean-leaderless"]
    assert any(e["errors"] == [0, 0] for e in asked), asked
    elected = asked[0]["detail"]
    changes = [
        entry.record
        for node in sorted((tmp_path / "quorum").iterdir())
        for entry in read_entries(segments(node / "__cluster_metadata-0"), 0)
        if isinstance(entry.record, PartitionChangeRecord) and entry.record.partition_id == elected["partition"]
    ]
    recovering = [c for c in changes if c.leader_recovery_state == 1]
    assert recovering and all(c.isr is not None and list(c.isr) == [c.leader] for c in recovering), changes
    assert any(c.leader_recovery_state == 0 for c in changes), "the new leader never reported RECOVERED"


def test_a_log_whose_history_retention_deleted_checks_clean(
    chaos_seed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """The seed draws a small log: by the end retention has deleted every node's first segments,
    so each log starts at a base snapshot taken mid-run. What the journal says happened before it
    (the brokers answered unfenced in the first seconds) is not judged against a log that no longer
    holds it (unfence-unwritten named such an unfencing "never" before)."""
    tmp_path, done = chaos_seed
    assert NodeSettings.drawn(SEED, 3) != NodeSettings()
    for node in (tmp_path / "quorum").iterdir():
        assert not (node / "__cluster_metadata-0" / "00000000000000000000.log").exists(), node
    assert done.returncode == 0 and f"seed {SEED}: clean" in done.stdout, done.stdout + done.stderr


def segments(directory: Path) -> list[tuple[int, Path]]:
    return sorted((int(path.stem), path) for path in directory.glob("*.log"))


def sim(seed: int, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "broker_sim", "sim", "--seeds", "1", "--first-seed", str(seed)]
    command += ["--scenario", "chaos", "--duration", "30", *options]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("patch", "seed", "rule"),
    [
        ("unclean_elects_the_last_eligible", 16, "unclean-election"),  # 1 of seeds 0-16 meets two eligible
        ("unclean_without_recovery", SEED, "unclean-election"),
        ("unclean_answered_not_written", 10, "unclean-answer"),  # 1 of seeds 0-30 meets it
        ("unclean_never_elects", SEED, "probe-answer"),  # ELIGIBLE_LEADERS_NOT_AVAILABLE, a replica eligible
    ],
)
def test_a_planted_unclean_election_bug_is_named(patch: str, seed: int, rule: str) -> None:
    done = sim(seed, "--patch", f"tests.broker_sim.sim.planted:{patch}")
    assert done.returncode == 1 and f"[{rule}]" in done.stdout, done.stdout + done.stderr
