"""The job's tables in DuckDB SQL, each a restatement of its Spark query in transforms.py, aggregates.py and journal.py.

Purpose: `write_tables(con, out, window_seconds)` builds every table of `analytics.pipeline.TABLES`
from the staged decoded rows (views `exchange_rows`, `partition_rows`, `topic_name_rows`,
`listener_rows`) and the journal (`journal_rows`), and writes each as Parquet under
`<out>/<table>/`. As in the job, the derived tables are built from the base tables as written and
the focus table from the derived ones as written.

Rules:
- Each query says in SQL what its Spark function says (the same joins, windows, null handling);
  constants and column lists are analytics' own, never restated.
- Nulls sort as in Spark (first ascending, last descending: set on the connection by `connect`).
- Timestamps are written as Spark writes them (INT96, read back as nanoseconds); sums are cast to
  BIGINT (DuckDB's are 128-bit) and sizes to INT, Spark's types.
- Percentiles are exact: the value at rank ceil(p * n) of the group's sorted values, which is
  what Spark's `percentile_approx` returns for small groups (every group of the tests' scenario).
  For large ones Spark's is approximate: in a 15,000-exchange capture of benchmarks/analytics_mix,
  the job's p99 of 8,324 heartbeats was the value at rank 8,240, not 8,241. So at a benchmark's
  size the two percentile columns may differ in value, and the baseline's are the costlier kind.
- `other_traffic` is empty and `decode_errors` has no pcap rows: the baseline reads capture dirs
  only, whose parts hold no pcap traffic.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from analytics import aggregates, journal, pcaps, pipeline
from analytics.aggregates import BROKER_TO_CONTROLLER, REGISTERED_ONLY, STALE_ERRORS, TIMELINE_PARTITIONS
from analytics.transforms import CONTROL_API_KEYS, EXCHANGE_COLUMNS, PARTITION_COLUMNS
from protocol.api_keys import ApiKey
from protocol.capture import INBOUND, OUTBOUND


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose nulls sort as Spark's do."""
    con = duckdb.connect()
    con.execute("SET default_null_order = 'nulls_first_on_asc_last_on_desc'")
    return con


def q(name: str) -> str:
    """A quoted identifier (`partition`, `time` and `rank` are SQL words)."""
    return f'"{name}"'


def columns(names: list[str], computed: dict[str, str]) -> str:
    """A select list of `names`, each the column of that name or its expression in `computed`."""
    return ", ".join(f"{computed[name]} AS {q(name)}" if name in computed else q(name) for name in names)


def keys(values: Iterable[int]) -> str:
    """An SQL list of integer codes (api keys, error codes)."""
    return ", ".join(str(int(value)) for value in values)


def stamp(nanoseconds: str) -> str:
    """transforms.timestamp_of: nanoseconds as a timestamp to the microsecond (`div` truncates)."""
    return f"make_timestamp({nanoseconds} // 1000)"


def window_start(window_seconds: float) -> str:
    """aggregates.window_start_ns: the request time less its floor remainder by the window's width."""
    width = aggregates.window_width_ns(window_seconds)
    return f"(request_time_ns - (((request_time_ns % {width}) + {width}) % {width}))"


def double(value: float) -> str:
    return f"CAST('{value!r}' AS DOUBLE)"


STALE = keys(STALE_ERRORS)

#: transforms.broker_listeners
LISTENERS = f"""SELECT listener AS listed, arg_max_null(broker_id, request_time_ns) AS listener_broker_id
FROM listener_rows WHERE api_key = {int(ApiKey.BROKER_REGISTRATION)} AND error_code = 0 GROUP BY listener"""


def resolved(view: str) -> str:
    """transforms.resolved: decoded rows whose request decoded, control requests' brokers from the listeners."""
    control = f"r.api_key IN ({keys(CONTROL_API_KEYS)})"
    broker = f"CASE WHEN {control} THEN coalesce(r.broker_id, l.listener_broker_id) ELSE r.broker_id END"
    address = f"CASE WHEN r.direction = '{OUTBOUND}' THEN r.peer ELSE r.server END"
    return f"""SELECT r.* REPLACE ({broker} AS broker_id) FROM {view} r
LEFT JOIN ({LISTENERS}) l ON {address} = l.listed WHERE r.request_decoded"""


EXCHANGES = f"""SELECT {
    columns(
        EXCHANGE_COLUMNS,
        {
            "time": stamp("request_time_ns"),
            "latency_ms": "CAST(response_time_ns - request_time_ns AS DOUBLE) / CAST(1000000 AS DOUBLE)",
        },
    )
} FROM ({resolved("exchange_rows")})"""

DECODE_ERRORS = f"""SELECT {stamp("request_time_ns")} AS "time", request_time_ns, source, direction, peer,
connection_id, api_key, api_version, correlation_id, request_bytes, response_bytes, decode_error AS reason
FROM exchange_rows WHERE decode_error IS NOT NULL"""

#: transforms.partition_results, with_isr_before (a state first seen at a row's own time sorts after it)
PARTITION_RESULTS = f"""WITH labelled AS (
  SELECT p.* REPLACE (coalesce(p.topic, l.topic_name, p.topic_id) AS topic),
    {stamp("p.request_time_ns")} AS "time",
    CASE WHEN p.isr_after IS NOT NULL THEN CAST(len(p.isr_after) AS INTEGER) END AS isr_size
  FROM ({resolved("partition_rows")}) p
  LEFT JOIN (SELECT topic_id, min(topic) AS topic_name FROM topic_name_rows GROUP BY topic_id) l
  ON p.topic_id = l.topic_id),
states AS (
  SELECT source, topic, "partition", min(request_time_ns) AS request_time_ns, isr_after AS state_isr, 1 AS is_state
  FROM labelled WHERE isr_after IS NOT NULL AND partition_epoch_granted IS NOT NULL
  GROUP BY source, topic, "partition", partition_epoch_granted, isr_after),
merged AS (SELECT *, 0 AS is_state FROM labelled UNION ALL BY NAME SELECT * FROM states),
placed AS (
  SELECT *, last_value(state_isr IGNORE NULLS) OVER (PARTITION BY source, topic, "partition"
    ORDER BY request_time_ns, is_state ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS isr_before
  FROM merged)
SELECT {columns(PARTITION_COLUMNS, {})} FROM placed WHERE is_state = 0"""

#: transforms.paired_exchanges
PAIR_KEY = "api_key, api_version, correlation_id, request_digest, request_bytes"
PAIRED_EXCHANGES = f"""WITH sent AS (
  SELECT {PAIR_KEY}, api_name, broker_id, source AS sender_source, request_time_ns AS sender_request_time_ns,
    latency_ms AS sender_latency_ms FROM exchanges WHERE direction = '{OUTBOUND}'),
received AS (
  SELECT {PAIR_KEY}, broker_id AS receiver_broker_id, source AS receiver_source,
    request_time_ns AS receiver_request_time_ns, latency_ms AS receiver_latency_ms
  FROM exchanges WHERE direction = '{INBOUND}'),
pairs AS (
  SELECT * FROM sent JOIN received USING ({PAIR_KEY})
  WHERE sender_source <> receiver_source AND sender_request_time_ns <= receiver_request_time_ns),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY receiver_source, receiver_request_time_ns, {PAIR_KEY}
    ORDER BY sender_request_time_ns DESC) AS n FROM pairs)
SELECT {stamp("sender_request_time_ns")} AS "time", api_name, api_version, correlation_id,
  coalesce(broker_id, receiver_broker_id) AS broker_id, sender_source, receiver_source,
  CAST(receiver_request_time_ns - sender_request_time_ns AS DOUBLE) / 1e6 AS request_transit_ms,
  sender_latency_ms, receiver_latency_ms, sender_latency_ms - receiver_latency_ms AS between_ms
FROM ranked WHERE n = 1"""


def request_rates(window_seconds: float) -> str:
    return f"""SELECT {stamp("w")} AS window_start, w AS window_start_ns, source, direction, api_name,
  count(*) AS requests, count(*) / {double(window_seconds)} AS requests_per_second
FROM (SELECT *, {window_start(window_seconds)} AS w FROM exchanges) GROUP BY w, source, direction, api_name"""


def ranked(values: str, quantile: float, count: str) -> str:
    """The value at rank ceil(quantile * count) of a sorted list (the module's rule on percentiles)."""
    return f"{values}[CAST(ceil({double(quantile)} * {count}) AS BIGINT)]"


LATENCY_PERCENTILES = f"""SELECT source, direction, api_name, api_version, exchanges,
  {ranked("sorted", 0.5, "exchanges")} AS p50_ms, {ranked("sorted", 0.95, "exchanges")} AS p95_ms,
  {ranked("sorted", 0.99, "exchanges")} AS p99_ms, mean_ms, max_ms
FROM (SELECT source, direction, api_name, api_version, count(*) AS exchanges, list_sort(list(latency_ms)) AS sorted,
    avg(latency_ms) AS mean_ms, max(latency_ms) AS max_ms
  FROM exchanges WHERE latency_ms IS NOT NULL GROUP BY source, direction, api_name, api_version)"""

ERROR_COUNTS = """SELECT source, direction, api_name, api_version, error_code, error_name, count(*) AS exchanges
FROM exchanges WHERE error_code IS NOT NULL GROUP BY source, direction, api_name, api_version, error_code, error_name"""


def with_newest_epoch(rows: str) -> str:
    """aggregates.with_newest_epoch over the rows of the query `rows`."""
    newest = """CASE WHEN broker_id IS NOT NULL THEN max(broker_epoch) OVER (PARTITION BY broker_id
    ORDER BY request_time_ns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END"""
    return f"""SELECT *, coalesce(broker_epoch < newest_broker_epoch, false) AS stale_incarnation
FROM (SELECT *, {newest} AS newest_broker_epoch FROM ({rows}))"""


def long_sum(condition: str) -> str:
    """Spark's `sum(condition.cast("long"))`: null when every condition is null."""
    return f"CAST(sum(CAST({condition} AS BIGINT)) AS BIGINT)"


BROKER_EPOCHS = f"""SELECT broker_id, epochs, CAST(len(epochs) AS INTEGER) AS incarnations,
  NOT unregistered AND len(epochs) > 1 AS bounced, unregistered, first_seen, last_seen, exchanges, stale_rejections,
  stale_incarnation_requests, stale_incarnation_accepted
FROM (SELECT broker_id, list_sort(list_distinct(list(broker_epoch))) AS epochs,
    max(CAST(api_key IN ({keys(BROKER_TO_CONTROLLER)}) AS INTEGER)) > 0
      AND NOT max(CAST(api_key IN ({keys(REGISTERED_ONLY)}) AND error_code = 0 AS INTEGER)) > 0 AS unregistered,
    min("time") AS first_seen, max("time") AS last_seen, count(*) AS exchanges,
    {long_sum(f"error_code IN ({STALE})")} AS stale_rejections,
    {long_sum("stale_incarnation")} AS stale_incarnation_requests,
    {long_sum("stale_incarnation AND error_code = 0")} AS stale_incarnation_accepted
  FROM ({with_newest_epoch("SELECT * FROM exchanges WHERE broker_id IS NOT NULL")}) GROUP BY broker_id)"""

EXCHANGE_KEY = "source, connection_id, request_time_ns, correlation_id"
STALE_REJECTIONS = f"""WITH marked AS ({with_newest_epoch("SELECT * FROM exchanges")}),
refused AS (SELECT {EXCHANGE_KEY}, count(*) AS partitions_rejected FROM partition_results
  WHERE error_code IN ({STALE}) GROUP BY {EXCHANGE_KEY}),
bounced AS (SELECT broker_id, true AS bounced_broker FROM broker_epochs WHERE bounced)
SELECT m."time", m.request_time_ns, m.source, m.direction, m.api_name, m.api_version, m.correlation_id, m.broker_id,
  m.broker_epoch, m.newest_broker_epoch, m.error_code, m.error_name,
  coalesce(r.partitions_rejected, 0) AS partitions_rejected, coalesce(b.bounced_broker, false) AS bounced_broker,
  m.stale_incarnation
FROM marked m LEFT JOIN refused r USING ({EXCHANGE_KEY}) LEFT JOIN bounced b ON m.broker_id = b.broker_id
WHERE m.error_code IN ({STALE})"""


def stale_rejections_per_window(window_seconds: float) -> str:
    return f"""SELECT {stamp("w")} AS window_start, broker_id, error_name, count(*) AS rejections
FROM (SELECT *, {window_start(window_seconds)} AS w FROM stale_rejections) GROUP BY w, broker_id, error_name"""


#: aggregates.isr_change
ISR_CHANGE = """CASE WHEN isr_before IS NOT NULL AND isr_after IS NOT NULL
    AND list_sort(isr_before) <> list_sort(isr_after)
  THEN CASE WHEN len(isr_after) < len(isr_before) THEN 'shrink' WHEN len(isr_after) > len(isr_before) THEN 'expand'
  ELSE 'reassign' END END"""

ISR_CHANGES = f"""WITH states AS (
  SELECT topic, "partition", partition_epoch_granted, isr_after, min(request_time_ns) AS request_time_ns
  FROM partition_results WHERE isr_after IS NOT NULL AND partition_epoch_granted IS NOT NULL
  GROUP BY topic, "partition", partition_epoch_granted, isr_after),
changed AS (
  SELECT *, {ISR_CHANGE} AS change FROM (SELECT *, lag(isr_after) OVER (PARTITION BY topic, "partition"
    ORDER BY request_time_ns, partition_epoch_granted) AS isr_before FROM states))
SELECT {stamp("request_time_ns")} AS "time", request_time_ns, topic, "partition",
  partition_epoch_granted AS partition_epoch, isr_before, isr_after, change
FROM changed WHERE change IS NOT NULL"""

UNSTABLE_PARTITIONS = f"""SELECT topic, "partition", count(*) AS changes, {long_sum("change = 'shrink'")} AS shrinks,
  {long_sum("change = 'expand'")} AS expansions, {long_sum("change = 'reassign'")} AS reassignments,
  min("time") AS first_change, max("time") AS last_change
FROM isr_changes GROUP BY topic, "partition\""""

#: the most unstable partitions first, ties by topic and partition (unstable_partitions' order)
UNSTABLE_ORDER = 'changes DESC, topic, "partition"'
PARTITION_TIMELINES = f"""WITH ranked AS (
  SELECT topic, "partition", CAST(row_number() OVER (ORDER BY {UNSTABLE_ORDER}) AS INTEGER) AS "rank"
  FROM unstable_partitions ORDER BY {UNSTABLE_ORDER} LIMIT {TIMELINE_PARTITIONS})
SELECT {columns(aggregates.TIMELINE_COLUMNS, {"isr_change": ISR_CHANGE})}
FROM partition_results JOIN ranked USING (topic, "partition")"""

CONTROLLED_SHUTDOWNS = f"""SELECT source, broker_id, broker_epoch, {stamp("started_ns")} AS started,
  {stamp("completed_ns")} AS completed, CAST(completed_ns - started_ns AS DOUBLE) / 1e9 AS duration_s, requests, apis
FROM (SELECT source, broker_id, broker_epoch, min(request_time_ns) AS started_ns,
    min(CASE WHEN shutdown_state = 'complete' THEN coalesce(response_time_ns, request_time_ns) END) AS completed_ns,
    count(*) AS requests, list_sort(list_distinct(list(api_name))) AS apis
  FROM exchanges WHERE shutdown_state IN ('requested', 'complete') AND broker_id IS NOT NULL
  GROUP BY source, broker_id, broker_epoch)"""

REPLICA_STATE_EVENTS = """SELECT "time", source, broker_id, broker_epoch, topic, "partition", replica_state, error_name,
  error_code = 0 AS accepted FROM partition_results WHERE api_name = 'AlterReplicaState'"""

#: journal.events_of (`duration_text` is the `%.0f` of `duration_ms`, inputs.journal_rows)
FLEET_EVENTS = f"""WITH marked AS (
  SELECT *, kind = 'registered' AND row_number() OVER (PARTITION BY broker, kind = 'registered' ORDER BY wall_ns) > 1
    AS again FROM journal_rows),
named AS (
  SELECT wall_ns AS time_ns, broker AS broker_id,
    CASE WHEN kind = 'fault' THEN fault WHEN kind = 'stale_replay' THEN 'stale replay (' || reason || ')'
      WHEN kind = 'fenced' AND NOT coalesce(intended, false) THEN 'fenced (unintended)'
      WHEN again THEN 're-registered' END AS event,
    CASE WHEN kind = 'fault' THEN CASE WHEN duration_ms > 0 THEN duration_text || ' ms' END
      WHEN kind = 'stale_replay' THEN api || CASE WHEN accepted THEN ', accepted' ELSE '' END
      WHEN again THEN 'broker epoch ' || coalesce(CAST(broker_epoch AS VARCHAR), 'null') END AS detail
  FROM marked WHERE wall_ns IS NOT NULL)
SELECT {columns(journal.EVENT_COLUMNS, {"time": stamp("time_ns")})} FROM named WHERE event IS NOT NULL"""


def other_traffic_schema() -> pa.Schema:
    """pcaps.other_traffic's columns: counted from `pcaps.PCAP_ROWS`' fields."""
    counted = {"connections": pa.int64(), "api_name": pa.string()} | dict.fromkeys(
        ("first_time", "last_time"), pa.timestamp("us")
    )
    return pa.schema(
        [(name, counted.get(name) or pcaps.PCAP_ROWS.field(name).type) for name in pcaps.OTHER_TRAFFIC_COLUMNS]
    )


def write_tables(con: duckdb.DuckDBPyConnection, out: Path, window_seconds: float) -> None:
    """Every table of `pipeline.TABLES`, in the job's order, each read back as written for the next."""
    queries = {
        "exchanges": EXCHANGES,
        "partition_results": PARTITION_RESULTS,
        "decode_errors": DECODE_ERRORS,
        "other_traffic": None,
        "paired_exchanges": PAIRED_EXCHANGES,
        "request_rates": request_rates(window_seconds),
        "latency_percentiles": LATENCY_PERCENTILES,
        "error_counts": ERROR_COUNTS,
        "broker_epochs": BROKER_EPOCHS,
        "stale_rejections": STALE_REJECTIONS,
        "stale_rejections_per_window": stale_rejections_per_window(window_seconds),
        "isr_changes": ISR_CHANGES,
        "unstable_partitions": UNSTABLE_PARTITIONS,
        "controlled_shutdowns": CONTROLLED_SHUTDOWNS,
        "replica_state_events": REPLICA_STATE_EVENTS,
        "partition_timelines": PARTITION_TIMELINES,
        "fleet_events": FLEET_EVENTS,
    }
    assert tuple(queries) == pipeline.TABLES, "a table of the job is missing here"
    for name, query in queries.items():
        where = out / name
        where.mkdir()
        if query is None:
            empty = other_traffic_schema().empty_table()
            write(pa.RecordBatchReader.from_batches(empty.schema, empty.to_batches()), where / "part-0.parquet")
        else:
            write(con.sql(query).to_arrow_reader(), where / "part-0.parquet", NO_NULLS.get(name, ()))
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{sql_path(where / 'part-0.parquet')}')")


#: The list columns whose elements Spark's schema says are never null (a `collect_set`'s).
NO_NULLS = {"broker_epochs": ("epochs",), "controlled_shutdowns": ("apis",)}


def write(batches: pa.RecordBatchReader, path: Path, no_nulls: tuple[str, ...] = ()) -> None:
    """Stream a query's batches into one Parquet file, timestamps as INT96 (as Spark writes them)
    and the lists `no_nulls` with non-null elements (as Spark's schema has them)."""
    schema = pa.schema(
        [
            field.with_type(pa.list_(field.type.value_field.with_nullable(False))) if field.name in no_nulls else field
            for field in batches.schema
        ]
    )
    with pq.ParquetWriter(path, schema, use_deprecated_int96_timestamps=True) as writer:
        for batch in batches:
            writer.write_batch(batch.cast(schema))


def sql_path(path: Path) -> str:
    """A path inside an SQL string literal."""
    return str(path).replace("'", "''")
