"""fencer-analyze's command line: a whole run, its output dir, and the refusals that exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from analytics import pipeline
from analytics.job import main
from analytics.pipeline import TABLES

from . import scenario
from .captures import write_capture
from .conftest import Analysed

ROOT = Path(__file__).resolve().parents[2]


def test_a_run_writes_every_table_the_report_and_prints_the_reports_path(analysed: Analysed) -> None:
    """To a `file://` URI (the `analysed` fixture): every table written by Spark's committer (its
    `_SUCCESS`), the report and summary by the driver through Hadoop's FileSystem API."""
    out = analysed.out
    assert analysed.exit_code == 0
    assert analysed.stdout[-2:] == [f"tables: file:{out}", f"report: file:{out}/report.html"]
    shown = sorted(path.name for path in out.iterdir() if not path.name.startswith("."))  # Hadoop's .crc files
    assert shown == sorted([*TABLES, "report.html", "summary.txt"])
    assert all((out / name / "_SUCCESS").is_file() for name in TABLES)
    rows = {name: ds.dataset(out / name, format="parquet").count_rows() for name in TABLES}
    assert rows["exchanges"] == 22 and rows["decode_errors"] == 4 and rows["partition_results"] == 10
    assert rows["paired_exchanges"] == 1 and rows["request_rates"] > 0 and rows["fleet_events"] == 5
    assert (out / "summary.txt").read_text().splitlines() == analysed.stdout[:-2]
    assert not analysed.replaced.exists(), "the old output dir was not replaced"
    assert [path.name for path in out.parent.iterdir() if path.name.startswith(".")] == []


def test_a_failed_run_leaves_the_previous_output_as_it_was(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_capture(tmp_path / "capture", scenario.controller_rows())
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("the good report")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the aggregates failed")

    monkeypatch.setattr(pipeline, "derived_tables", broken)  # after the base tables were written
    with pytest.raises(RuntimeError, match="the aggregates failed"):
        pipeline.run(spark, [tmp_path / "capture"], out)
    assert [path.name for path in out.iterdir()] == ["report.html"]
    assert (out / "report.html").read_text() == "the good report"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["capture", "out"]


#: Root reads a directory whatever its mode says, through two capabilities (CAP_DAC_OVERRIDE,
#: CAP_DAC_READ_SEARCH). Without them (util-linux's setpriv drops them from the bounding set, so
#: the interpreter it runs never gets them), a mode binds root as it binds its owner: the job
#: runs as the same user, with the same interpreter and checkout, wherever the checkout lives.
BOUND_BY_MODES = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def refusal(
    tmp_path: Path, *argv: str, env: dict[str, str] | None = None, bound_by_modes: bool = False
) -> tuple[int, str]:
    """Run `python -m analytics` in a subprocess (no Spark is started for a refusal); with
    `bound_by_modes`, unable to read what file modes forbid even as root (`BOUND_BY_MODES`)."""
    done = subprocess.run(
        [*(BOUND_BY_MODES if bound_by_modes else []), sys.executable, "-m", "analytics", *argv],
        cwd=ROOT,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    write_capture(tmp_path / "capture", [scenario.heartbeat(1, 10, 0)])
    return tmp_path / "capture"


def test_without_java_the_job_says_so_in_one_line(tmp_path: Path, capture: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "nowhere")
    code, stderr = refusal(tmp_path, str(capture), "--out", str(tmp_path / "out"), env=env)
    assert (code, stderr.splitlines()) == (
        2,
        ["fencer-analyze: Java not found: install Java 17 and put `java` on PATH or set JAVA_HOME"],
    )
    assert not (tmp_path / "out").exists()


def test_an_empty_or_missing_capture_dir_is_one_line_and_exit_2(tmp_path: Path, capture: Path) -> None:
    (tmp_path / "empty").mkdir()
    for directory, message in [("empty", "no capture parts"), ("missing", "not a directory")]:
        code, stderr = refusal(tmp_path, str(capture), str(tmp_path / directory), "--out", str(tmp_path / "out"))
        assert code == 2 and len(stderr.splitlines()) == 1 and message in stderr, stderr


def test_an_unreadable_capture_dir_is_one_line_and_exit_2(tmp_path: Path, capture: Path) -> None:
    capture.chmod(0)
    try:
        code, stderr = refusal(tmp_path, str(capture), "--out", str(tmp_path / "out"), bound_by_modes=True)
    finally:
        capture.chmod(0o755)
    assert (code, stderr.splitlines()) == (
        2,
        [f"fencer-analyze: capture dir {capture}: cannot be read (Permission denied)"],
    )
    assert not (tmp_path / "out").exists()


def test_an_output_path_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path, capture: Path) -> None:
    (tmp_path / "out").write_text("not a dir")
    code, stderr = refusal(tmp_path, str(capture), "--out", str(tmp_path / "out"))
    assert (code, stderr.strip()) == (2, f"fencer-analyze: output {tmp_path / 'out'}: exists and is not a directory")
    assert (tmp_path / "out").read_text() == "not a dir"


def test_bad_arguments_exit_2(capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "out")
    for argv in (
        [str(capture), "--out", out, "--window-seconds", "0"],
        [str(capture), "--out", out, "--from", "yesterday"],
        [str(capture)],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2, argv
    backwards = [str(capture), "--out", out, "--from", "2026-11-23T10:00:01", "--to", "2026-11-23T10:00:00"]
    assert main(backwards) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "fencer-analyze: --from must be before --to"
    assert main([str(capture), "--out", out, "--journal", str(tmp_path / "no-journal")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"fencer-analyze: journal {tmp_path / 'no-journal'}: not a file"
    assert not Path(out).exists()


def test_a_uri_no_filesystem_takes_is_one_line_and_exit_2(
    spark: SparkSession, capture: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(capture), "--out", "nosuchfs://somewhere/out"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("fencer-analyze: output nosuchfs://somewhere/out: ") and "nosuchfs" in err[-1][40:]
