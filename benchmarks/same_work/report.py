"""The same-work baseline's report: analytics' own `Report`, its numbers queried with DuckDB from the tables as written.

Purpose: `build_report(con, captures, window_seconds)` restates each query of
`analytics.report.collect` in SQL over the written tables (views named as the tables), turns the
rows into the `Row`s Spark's `collect()` gives (timestamps as pyspark makes them), and finishes
the `Report` with analytics' own pure parts (`chosen_sources`, `timelines_of`, `draw`), so that
report_html and report_summary render it unchanged.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa
from pyspark.sql import Row
from pyspark.sql.types import TimestampType

from analytics import aggregates, charts
from analytics.report import (
    EVENT_POINTS,
    PAIR_QUANTILES,
    REASONS_LISTED,
    REFUSED_POINTS,
    SHUTDOWN_KEY,
    SHUTDOWNS_LISTED,
    STALE_POINTS,
    STATE_FIELDS,
    UNSTABLE_LISTED,
    Report,
    Timeline,
    chosen_sources,
    timelines_of,
)
from analytics.report_charts import draw

from .tables import UNSTABLE_ORDER, q, ranked

_TIMESTAMP = TimestampType()


def python_values(column: pa.ChunkedArray) -> list[Any]:
    """A column's values as Spark's `collect()` gives them: a timestamp as pyspark's naive
    local-time datetime (`TimestampType.fromInternal` of its microseconds)."""
    if pa.types.is_timestamp(column.type):
        micros = column.cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()
        return [_TIMESTAMP.fromInternal(value) for value in micros]
    values: list[Any] = column.to_pylist()
    return values


def rows(con: duckdb.DuckDBPyConnection, query: str) -> list[Row]:
    """A query's rows as `Row`s with its column names."""
    table = con.sql(query).to_arrow_table()
    names = table.column_names
    values = [python_values(table[name]) for name in names]
    return [Row(**dict(zip(names, row, strict=True))) for row in zip(*values, strict=True)]


def listed(names: list[str]) -> str:
    return ", ".join(map(q, names))


SHUTDOWN_ORDER = listed(SHUTDOWN_KEY)
SLOWEST_KEY = listed(aggregates.EXCHANGE_KEY)

#: aggregates.slowest_exchanges
SLOWEST = f"""WITH slow AS (
  SELECT * FROM exchanges WHERE latency_ms IS NOT NULL
  ORDER BY latency_ms DESC, {SLOWEST_KEY} LIMIT {aggregates.SLOWEST}),
named AS (
  SELECT {SLOWEST_KEY}, list_sort(list(concat_ws('-', topic, CAST("partition" AS VARCHAR)))) AS partitions
  FROM partition_results JOIN (SELECT {SLOWEST_KEY} FROM slow) USING ({SLOWEST_KEY}) GROUP BY {SLOWEST_KEY})
SELECT "time", latency_ms, {SLOWEST_KEY}, api_name, api_version, broker_id, error_name,
  coalesce(partitions, []) AS partitions
FROM slow LEFT JOIN named USING ({SLOWEST_KEY}) ORDER BY latency_ms DESC, {SLOWEST_KEY}"""

#: the pairs' percentile_approx of `between_ms` (nulls left out; null for a group without one)
QUANTILES = ", ".join(ranked("sorted", quantile, "n") for quantile in PAIR_QUANTILES)
PAIRS = f"""SELECT api_name, pairs, CASE WHEN n > 0 THEN [{QUANTILES}] END AS q
FROM (SELECT api_name, count(*) AS pairs, count(between_ms) AS n,
    list_sort(list(between_ms) FILTER (WHERE between_ms IS NOT NULL)) AS sorted
  FROM paired_exchanges GROUP BY api_name)
ORDER BY api_name"""

OTHER_TRAFFIC = """SELECT kind, api_name, CAST(sum(connections) AS BIGINT) AS connections,
  CAST(sum(requests) AS BIGINT) AS requests, CAST(sum(responses) AS BIGINT) AS responses,
  CAST(sum(request_bytes + response_bytes) AS BIGINT) AS bytes, list_sort(list_distinct(list(api_version))) AS versions
FROM other_traffic GROUP BY kind, api_name ORDER BY requests DESC, bytes DESC, kind, api_name"""


def build_report(con: duckdb.DuckDBPyConnection, captures: list[str], window_seconds: float) -> Report:
    """analytics.report.collect over the written tables, in DuckDB."""
    report = Report(captures, window_seconds)
    span = rows(con, "SELECT count(*) AS n, min(request_time_ns) AS first, max(request_time_ns) AS last FROM exchanges")
    report.exchanges, report.first_ns, report.last_ns = span[0]
    report.by_source = {row["source"]: row["count"] for row in rows(con, _counted("exchanges", "source"))}
    report.decode_errors = _count(con, "decode_errors")
    reasons = rows(con, _counted("decode_errors", "reason") + f" ORDER BY count DESC, reason LIMIT {REASONS_LISTED}")
    report.decode_reasons = [(row["reason"], row["count"]) for row in reasons]
    by_api = "api_name, source, direction"
    report.rates = rows(con, f"SELECT * FROM request_rates ORDER BY {by_api}, window_start_ns")
    report.latencies = rows(con, "SELECT * FROM latency_percentiles ORDER BY api_name, api_version, source, direction")
    report.errors = rows(con, f"SELECT * FROM error_counts ORDER BY {by_api}, api_version, error_code")
    report.stale_total = _count(con, "stale_rejections")
    report.stale = rows(
        con,
        "SELECT request_time_ns, broker_id, error_name FROM stale_rejections "
        f"ORDER BY request_time_ns, broker_id, error_name LIMIT {STALE_POINTS}",
    )
    report.brokers = rows(con, "SELECT * FROM broker_epochs ORDER BY broker_id")
    report.unstable = rows(con, f"SELECT * FROM unstable_partitions ORDER BY {UNSTABLE_ORDER} LIMIT {UNSTABLE_LISTED}")
    report.isr_changes = {row["change"]: row["count"] for row in rows(con, _counted("isr_changes", "change"))}
    report.shutdown_total = _count(con, "controlled_shutdowns")
    report.shutdowns = rows(
        con, f"SELECT * FROM controlled_shutdowns ORDER BY started, {SHUTDOWN_ORDER} LIMIT {SHUTDOWNS_LISTED}"
    )
    report.longest_shutdowns = rows(
        con,
        "SELECT * FROM controlled_shutdowns "
        f"ORDER BY duration_s DESC NULLS FIRST, started, {SHUTDOWN_ORDER} LIMIT {charts.MAX_BARS}",
    )
    report.timelines = timelines(con)
    report.replica_events = rows(
        con, _counted("replica_state_events", "replica_state, accepted") + " ORDER BY replica_state, accepted"
    )
    report.pairs = rows(con, PAIRS)
    report.slowest = rows(con, SLOWEST)
    report.other_traffic = rows(con, OTHER_TRAFFIC)
    report.events = rows(con, f"SELECT * FROM fleet_events ORDER BY time_ns, broker_id, event LIMIT {EVENT_POINTS}")
    report.event_counts = rows(
        con,
        "SELECT event, count(*) AS events, min(time_ns) AS first_ns, max(time_ns) AS last_ns FROM fleet_events "
        "GROUP BY event ORDER BY events DESC, event",
    )
    report.charts = draw(report)
    return report


def _counted(table: str, by: str) -> str:
    """Spark's `groupBy(by).count()`: the rows of each group, as `count`."""
    return f"SELECT {by}, count(*) AS count FROM {table} GROUP BY {by}"


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(rows(con, f"SELECT count(*) AS n FROM {table}")[0]["n"])


GRANTED = "partition_epoch_granted IS NOT NULL AND isr_after IS NOT NULL"


def timelines(con: duckdb.DuckDBPyConnection) -> list[Timeline]:
    """analytics.report.collect_timelines over the written partition_timelines."""
    seen = rows(
        con,
        f"""SELECT "rank", topic, "partition", source, count(*) AS rows,
  CAST(sum(CAST({GRANTED} AS BIGINT)) AS BIGINT) AS granted FROM partition_timelines
GROUP BY "rank", topic, "partition", source ORDER BY "rank", granted DESC, source""",
    )
    chosen, counted = chosen_sources(seen)
    if not chosen:
        return []
    sources = pa.table(
        {"rank": [rank for rank in chosen], "source": [row["source"] for row in chosen.values()]},
        schema=pa.schema([("rank", pa.int32()), ("source", pa.string())]),
    )
    con.register("chosen_sources", sources)
    mine = 'SELECT * FROM partition_timelines JOIN chosen_sources USING ("rank", source)'
    first = (
        "arg_min_null(struct_pack("
        + ", ".join(f"{q(name)} := {q(name)}" for name in STATE_FIELDS)
        + "), request_time_ns)"
    )
    states = rows(
        con,
        f"""SELECT * FROM (SELECT "rank", unnest(first) FROM (SELECT "rank", {first} AS first FROM ({mine})
  WHERE {GRANTED} GROUP BY "rank", partition_epoch_granted, leader_epoch_granted))
ORDER BY "rank", request_time_ns, partition_epoch_granted, leader_epoch_granted""",
    )
    failed = f"SELECT * FROM ({mine}) WHERE error_code <> 0"
    refused_total = {
        row["rank"]: row["count"]
        for row in rows(con, f'SELECT "rank", count(*) AS count FROM ({failed}) GROUP BY "rank"')
    }
    refused = rows(
        con,
        f"""SELECT "rank", request_time_ns, broker_id, api_name, error_name FROM (SELECT *, row_number() OVER (
  PARTITION BY "rank" ORDER BY request_time_ns, broker_id, api_name) AS n FROM ({failed})) WHERE n <= {REFUSED_POINTS}
ORDER BY "rank", request_time_ns, broker_id, api_name""",
    )
    con.unregister("chosen_sources")
    return timelines_of(chosen, counted, states, refused, refused_total)
