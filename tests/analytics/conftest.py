"""One local SparkSession for every analytics test (Spark's testing guide: session-scoped).

`local[2]` (the machine's two cores), two shuffle partitions (test frames are tiny; the default
200 would cost seconds per aggregate), no UI, UTC, and the Python workers on this interpreter.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from pyspark.sql import DataFrame, SparkSession

from analytics.job import main, workers_import_this_code
from analytics.read import read_captures

from . import scenario
from .captures import write_capture
from .test_fleet_events import write_journal


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    workers_import_this_code()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("fencer-analytics-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def story_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The scenario's captures: the controller's (prefix "capture") and the fleet's (prefix "fleet")."""
    root = tmp_path_factory.mktemp("story")
    write_capture(root / "controller", scenario.controller_rows())
    write_capture(root / "fleet", scenario.fleet_rows(), prefix="fleet")
    return [root / "controller", root / "fleet"]


@pytest.fixture(scope="session")
def story(spark: SparkSession, story_dirs: list[Path]) -> DataFrame:
    """The scenario's decoded rows (decoded once, cached for every test)."""
    return read_captures(spark, story_dirs).cache()


class Analysed(NamedTuple):
    out: Path
    exit_code: int
    stdout: list[str]
    replaced: Path  # a file the output dir held before the run
    captures: list[Path]  # the capture dirs given, in order: the scenario's and the corrupt rows'
    journal: Path  # the fleet journal given


@pytest.fixture(scope="session")
def analysed(spark: SparkSession, story_dirs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Analysed:
    """The whole job (`fencer-analyze`'s main) on the scenario plus a capture of corrupt rows, once.

    The output is given as a Hadoop URI (`file://` + the dir), so the run goes through Hadoop's
    FileSystem API as it would for hdfs:// or s3a:// (output.py); a local path's run is
    test_job.py's failed run, test_paths.py's and the cluster test's. The output dir exists
    beforehand, holding a file the new output must not keep. A fleet journal (test_fleet_events.py's)
    is given, so the report marks its events."""
    root = tmp_path_factory.mktemp("analysed")
    write_capture(root / "corrupt", scenario.corrupt_rows())
    out = root / "out"
    out.mkdir()
    (out / "old-report.html").write_text("an older run")
    printed = io.StringIO()
    captures = [*story_dirs, root / "corrupt"]
    with contextlib.redirect_stdout(printed):
        journal = write_journal(root / "journal.jsonl")
        code = main([*map(str, captures), "--out", "file://" + str(out), "--journal", str(journal)])
    return Analysed(out, code, printed.getvalue().splitlines(), out / "old-report.html", captures, journal)
