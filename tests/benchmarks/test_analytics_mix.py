"""benchmarks/analytics_mix.py, the analytics benchmark's generated capture: seeded, so the same count
and seed give the same files, in any process (whatever its string hash seed, PYTHONHASHSEED)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write_in_a_process(directory: Path, hash_seed: str) -> dict[str, str]:
    """`write_capture(directory, 2000, seed=7)` in a new interpreter; the sha256 of each file it wrote, by name."""
    subprocess.run(
        [
            sys.executable, "-c",
            "import sys; from pathlib import Path; from benchmarks.analytics_mix import write_capture; "
            "write_capture(Path(sys.argv[1]), 2000, 7)",
            str(directory),
        ],
        cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True, timeout=120,
    )  # fmt: skip
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in directory.iterdir()}


def test_the_same_count_and_seed_give_the_same_files_in_any_process(tmp_path: Path) -> None:
    first = write_in_a_process(tmp_path / "first", "1")
    assert any(name.endswith(".parquet") for name in first)
    assert write_in_a_process(tmp_path / "second", "2") == first
