"""Capture and output dirs named with characters that URIs escape or Hadoop globs take: read literally.

The fleet's `--processes K` capture dirs are `process=<k>`; handed to Spark as `Path.as_uri()`
(`process%3D0`) they were PATH_NOT_FOUND. Every name below is read as itself: a glob character
neither reads a sibling it would match (each glob name has one, holding more rows) nor fails; the
names Spark cannot take are refused in one line before any work."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from analytics.job import main
from analytics.output import unsorted_partitioned_writes
from analytics.pipeline import TABLES

from . import scenario
from .captures import write_capture

#: Capture dir names: URI-escaped characters, non-ASCII, Hadoop glob characters, a `:` alone.
NAMES = [
    "process=0", "a b", "100%", "x%3Dy", "#1", "?q=1", "é日本", "a?b", "all*", "[1]", "{x,y}", "{", "back\\slash",
    "a:b", "new\nline",
]  # fmt: skip
#: Siblings that the glob names above would match (`a?b`, `all*`, `[1]`, `{x,y}`), with 3 rows each.
DECOYS = ["axb", "all-of-it", "1", "x", "y"]


def test_capture_and_output_dirs_are_read_by_their_literal_names(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    captures = tmp_path / "captures"
    for name in NAMES:
        write_capture(captures / name, [scenario.heartbeat(1, 10, 0)])
    for name in DECOYS:  # the same part name as the real dirs' (the same first time), so a glob would find it
        write_capture(captures / name, [scenario.heartbeat(2, 20, at_ms) for at_ms in (0, 1, 2)])
    out = tmp_path / "out=1 #%3D é [x]{y}*?"

    assert main([*(str(captures / name) for name in NAMES), "--out", str(out)]) == 0, capsys.readouterr().err
    assert ds.dataset(out / "exchanges", format="parquet").count_rows() == len(NAMES)
    assert sorted(path.name for path in out.iterdir()) == sorted([*TABLES, "report.html", "summary.txt"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["captures", out.name], "written somewhere else"


def test_a_path_with_a_colon_and_a_glob_character_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_capture(tmp_path / "good", [scenario.heartbeat(1, 10, 0)])
    write_capture(tmp_path / "at 10:00 [a]", [scenario.heartbeat(1, 10, 0)])
    assert main([str(tmp_path / "at 10:00 [a]"), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"fencer-analyze: capture dir {tmp_path / 'at 10:00 [a]'}: Spark cannot read a path holding both ':' and "
        "a glob character (here [ ]); rename it"
    ]
    assert main([str(tmp_path / "good"), "--out", str(tmp_path / "out:*")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"fencer-analyze: output {tmp_path / 'out:*'}: Spark cannot read a path holding both ':' and "
        "a glob character (here *); rename it"
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["at 10:00 [a]", "good"]


def test_a_name_the_jvm_cannot_encode_is_refused_in_one_line(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Not valid UTF-8, the JVM's file name encoding here (as non-ASCII is under LC_ALL=C's ASCII).
    write_capture(tmp_path / "written", [scenario.heartbeat(1, 10, 0)])
    unencodable = tmp_path / os.fsdecode(b"caf\xe9")
    (tmp_path / "written").rename(unencodable)
    assert main([str(unencodable), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"fencer-analyze: capture dir {tmp_path}/caf\\xe9: the JVM cannot open this name, which its file name "
        "encoding (UTF-8, from the locale) cannot encode; a UTF-8 locale (LC_ALL=C.UTF-8) takes any name in UTF-8"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == [unencodable.name]


def test_an_output_is_a_uri_when_hadoop_would_read_a_scheme() -> None:
    from analytics.output import is_uri

    for uri in ("file:///tmp/out", "file:/tmp/out", "hdfs://namenode:8020/out", "s3a://bucket/out", "hdfs:/out"):
        assert is_uri(uri), uri
    for path in ("/tmp/out", "out", "process=0/out", "a:b", "./file:/x", "c:", "x:/y"):
        assert not is_uri(path), path


def test_the_unsorted_write_settings_hold_inside_the_block_only(spark: SparkSession) -> None:
    """pipeline.py stages the decoded rows without Spark's sort by row kind (output.unsorted_partitioned_writes);
    the session's own settings are back after, so a caller's session is left as it was."""
    key, writers = "spark.sql.optimizer.plannedWrite.enabled", "spark.sql.maxConcurrentOutputFileWriters"
    spark.conf.set(writers, "2")
    before = spark.conf.get(key, None)
    with unsorted_partitioned_writes(spark, open_files=4):
        assert (spark.conf.get(key), spark.conf.get(writers)) == ("false", "4")
    assert (spark.conf.get(key, None), spark.conf.get(writers)) == (before, "2")
    spark.conf.unset(writers)
