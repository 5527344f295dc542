"""The same-work baseline (benchmarks/same_work) does the job's work: the job's tables, row for
row, and the job's report.

Both run on the same inputs: the `analysed` fixture's run of the job (the scenario's captures, a
capture of corrupt rows and a fleet journal, on the session's Spark, so no JVM is started here)
and the baseline over the capture dirs and journal that run was given. Its figures in
benchmarks/analytics.py mean something only while this holds.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from analytics.pipeline import TABLES
from benchmarks.same_work import same_work

from .conftest import Analysed

#: Columns compared with a tolerance, and why: Spark's `mean` sums doubles in the order its
#: partitions and their merge give, which the job does not fix (another partitioning may round
#: the last bit differently), so an exact match would test Spark's partitioning, not the baseline.
INEXACT = {("latency_percentiles", "mean_ms")}
RELATIVE_TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def baseline(analysed: Analysed, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The baseline's output dir and the summary lines it returned."""
    out = tmp_path_factory.mktemp("same-work") / "out"
    return out, same_work(analysed.captures, out, [analysed.journal])


def _key(value: Any) -> tuple[Any, ...]:
    """A sort key for any cell: nulls first, lists element by element."""
    if value is None:
        return (0,)
    if isinstance(value, list):
        return (1, tuple(_key(item) for item in value))
    return (1, value)


def sorted_rows(path: Path) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """A written table's columns (name, Arrow type) and its rows, sorted by every column in order."""
    table = pq.read_table(path)
    rows = table.to_pylist()
    return [(field.name, str(field.type)) for field in table.schema], sorted(
        rows, key=lambda row: tuple(_key(value) for value in row.values())
    )


@pytest.mark.parametrize("name", TABLES)
def test_each_table_has_the_jobs_columns_types_and_rows(
    analysed: Analysed, baseline: tuple[Path, list[str]], name: str
) -> None:
    """Column names and Arrow types as read back (Spark's INT96 timestamps, int16 api keys, lists
    with non-null elements where Spark's schema says so; a column's own nullability is not compared:
    Spark marks a count not null, a Parquet flag that no reader of the tables sees), then every row."""
    job_columns, job_rows = sorted_rows(analysed.out / name)
    columns, rows = sorted_rows(baseline[0] / name)
    assert columns == job_columns
    assert job_rows or name == "other_traffic", "the scenario fills every table but the pcap's"
    assert len(rows) == len(job_rows)
    for row, job_row in zip(rows, job_rows, strict=True):
        for column, value in row.items():
            expected = job_row[column]
            if (name, column) in INEXACT and value is not None and expected is not None:
                assert math.isclose(value, expected, rel_tol=RELATIVE_TOLERANCE), (column, row, job_row)
            else:
                assert value == expected, (column, row, job_row)


def test_the_summary_is_the_jobs(analysed: Analysed, baseline: tuple[Path, list[str]]) -> None:
    out, lines = baseline
    summary = (analysed.out / "summary.txt").read_text()
    assert (out / "summary.txt").read_text() == summary
    assert lines == summary.splitlines()


def test_the_page_is_the_jobs_byte_for_byte(analysed: Analysed, baseline: tuple[Path, list[str]]) -> None:
    """Nothing on the page is run-specific: it names the capture dirs (the same inputs), not the
    output, and holds no time of the run; its charts are the same PNGs, drawn from the same numbers."""
    assert (baseline[0] / "report.html").read_text() == (analysed.out / "report.html").read_text()
