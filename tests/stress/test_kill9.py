"""Five rounds of the SIGKILL durability stress in the suite, one per kill moment (20 on demand:
tests/stress/kill9.py)."""

from __future__ import annotations

from pathlib import Path

from .kill9 import run


def test_acknowledged_changes_survive_sigkill(tmp_path: Path) -> None:
    acknowledged = run(rounds=5, seed=20261121, data_dir=tmp_path / "data", verbose=False)
    assert acknowledged > 100  # the clients really were writing when the daemon died
