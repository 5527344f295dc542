"""Times are nanoseconds since the epoch, and a double holds today's only to 256 ns: windows,
time arguments and the report's clock are computed in integers, so that no entry falls in a wrong window."""

from __future__ import annotations

from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from analytics import aggregates
from analytics.job import instant
from analytics.report_summary import utc

SECOND = 1_000_000_000
BOUNDARY = 1_764_115_200 * SECOND  # 2025-11-26 00:00:00 UTC, a window boundary at every width below


def test_a_request_in_a_windows_last_nanosecond_is_counted_in_that_window(spark: SparkSession) -> None:
    times = [BOUNDARY - 1, BOUNDARY - 100, BOUNDARY - 128, BOUNDARY, BOUNDARY + SECOND - 1, -1, 0]
    rows = spark.createDataFrame([Row(request_time_ns=t) for t in times], "request_time_ns long")
    for seconds in (1.0, 0.5, 0.001):
        width = round(seconds * SECOND)
        got = rows.select("request_time_ns", aggregates.window_start_ns(seconds).alias("start"))
        expected = [Row(request_time_ns=t, start=t // width * width) for t in times]  # Python's exact floor
        assertDataFrameEqual(got, expected)
    assert (BOUNDARY - 1) // SECOND * SECOND == BOUNDARY - SECOND  # the last nanosecond is not the next window


def test_time_arguments_are_exact_to_the_nanosecond() -> None:
    assert instant("1764115199.999999999") == BOUNDARY - 1
    assert instant("1764115200") == BOUNDARY
    assert instant(" 1764115199.9999999 ") == BOUNDARY - 100
    assert instant("2025-11-25T23:59:59.999999") == BOUNDARY - 1000
    assert instant("2025-11-26T01:00:00.000001+01:00") == BOUNDARY + 1000
    assert instant("2025-11-26") == BOUNDARY


def test_the_reports_clock_never_rounds_into_the_next_second() -> None:
    assert utc(BOUNDARY - 100) == "2025-11-25 23:59:59.999 UTC"
    assert utc(BOUNDARY) == "2025-11-26 00:00:00.000 UTC"
    assert utc(None) == "-"
