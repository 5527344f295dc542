"""The report: the few numbers a person wants, collected from the tables, with its charts drawn.

Purpose: `collect(tables, captures, window_seconds)` brings the small aggregates to the driver
(never a whole table) into a `Report`, its charts drawn as PNG (report_charts.py); `html` in
report_html.py renders it as one self-contained page, `summary` in report_summary.py as the
console's lines. Choosing each unstable partition's source and assembling its `Timeline`
(`chosen_sources`, `timelines_of`) and drawing the charts (`draw`) take collected rows only, so
the same-work baseline (benchmarks/same_work) builds the same `Report` from its own queries.

Rules:
- Everything here reads the aggregates, which are small by construction (windows x APIs, the
  most unstable partitions, brokers); rows of a large table are only ever counted.
- Chart ids (`CHARTS`) are fixed: tests and readers find each chart by its id.
- Every collected list is ordered by its key columns (ties included) before it reaches the page:
  the order Spark returns rows in depends on partitioning (a cluster's differs from a local
  run's), and the summary's ties, the charts' series and the tables follow the list's order, so
  the same tables always make the same report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from . import aggregates, charts
from .report_charts import draw

#: (chart id, caption), in the page's order; the first is the docs' picture of the report.
CHARTS = [
    ("request-rate", "Request rate over time by API"),
    ("latency", "Latency percentiles per API and version"),
    ("errors", "Error codes by API"),
    ("stale-rejections", "Stale-epoch rejections per broker over time"),
    ("isr-churn", "ISR churn: the most unstable partitions"),
    ("partition-timelines", "The most unstable partitions over time: leader, ISR and epochs"),
    ("shutdowns", "Controlled-shutdown durations"),
]


@dataclass
class Timeline:
    """One of the most unstable partitions, as one source saw it (the one that saw the most of it)."""

    rank: int
    topic: str
    partition: int
    source: str
    rows: int  # of the partition in the partition_timelines table, every source
    states: list[Row]  # each granted (leader epoch, partition epoch) with the row that first granted it
    refused: list[Row]  # refused requests (a non-zero error), the earliest `REFUSED_POINTS`
    refused_total: int


@dataclass
class Report:
    """What the page and the summary show."""

    captures: list[str]
    window_seconds: float
    exchanges: int = 0
    first_ns: int | None = None
    last_ns: int | None = None
    by_source: dict[str, int] = field(default_factory=dict)
    decode_errors: int = 0
    decode_reasons: list[tuple[str, int]] = field(default_factory=list)
    rates: list[Row] = field(default_factory=list)
    latencies: list[Row] = field(default_factory=list)
    errors: list[Row] = field(default_factory=list)
    stale: list[Row] = field(default_factory=list)
    stale_total: int = 0
    brokers: list[Row] = field(default_factory=list)
    unstable: list[Row] = field(default_factory=list)
    isr_changes: dict[str, int] = field(default_factory=dict)
    timelines: list[Timeline] = field(default_factory=list)
    shutdowns: list[Row] = field(default_factory=list)
    longest_shutdowns: list[Row] = field(default_factory=list)
    shutdown_total: int = 0
    replica_events: list[Row] = field(default_factory=list)
    pairs: list[Row] = field(default_factory=list)
    slowest: list[Row] = field(default_factory=list)
    other_traffic: list[Row] = field(default_factory=list)  # per kind and API, the most requests first
    events: list[Row] = field(default_factory=list)  # the fleet's, the earliest `EVENT_POINTS`
    event_counts: list[Row] = field(default_factory=list)
    charts: dict[str, bytes] = field(default_factory=dict)


STALE_POINTS = 20_000  # rejections drawn on the timeline at most, the earliest (the table has them all)
EVENT_POINTS = 5_000  # the fleet's events marked on the timelines at most, the earliest (the table has them all)
REFUSED_POINTS = 2_000  # refused requests drawn on a partition's timeline at most, the earliest
REASONS_LISTED = 10  # decode errors' reasons listed, the most frequent
UNSTABLE_LISTED = 15  # the most unstable partitions charted
SHUTDOWNS_LISTED = 200  # controlled shutdowns listed on the page, the earliest
PAIR_QUANTILES = [0.5, 0.99]  # of the time exchanges both sides captured spent outside the receiver


def collect(tables: dict[str, DataFrame], captures: list[str], window_seconds: float) -> Report:
    """The report's numbers, from the job's tables (as written, so nothing is recomputed)."""
    report = Report(captures, window_seconds)
    exchanges = tables["exchanges"]
    span = exchanges.agg(F.count(F.lit(1)), F.min("request_time_ns"), F.max("request_time_ns")).first()
    assert span is not None
    report.exchanges, report.first_ns, report.last_ns = span[0], span[1], span[2]
    report.by_source = {row["source"]: row["count"] for row in exchanges.groupBy("source").count().collect()}
    errors = tables["decode_errors"]
    report.decode_errors = errors.count()
    reasons = errors.groupBy("reason").count().orderBy(F.col("count").desc(), "reason")
    report.decode_reasons = [(row["reason"], row["count"]) for row in reasons.limit(REASONS_LISTED).collect()]
    by_api = ["api_name", "source", "direction"]
    report.rates = tables["request_rates"].orderBy(*by_api, "window_start_ns").collect()
    report.latencies = tables["latency_percentiles"].orderBy("api_name", "api_version", "source", "direction").collect()
    report.errors = tables["error_counts"].orderBy(*by_api, "api_version", "error_code").collect()
    stale = tables["stale_rejections"].select("request_time_ns", "broker_id", "error_name")
    report.stale_total = stale.count()
    report.stale = stale.orderBy("request_time_ns", "broker_id", "error_name").limit(STALE_POINTS).collect()
    report.brokers = tables["broker_epochs"].orderBy("broker_id").collect()
    report.unstable = (
        tables["unstable_partitions"]
        .orderBy(F.col("changes").desc(), "topic", "partition")
        .limit(UNSTABLE_LISTED)
        .collect()
    )
    report.isr_changes = {
        row["change"]: row["count"] for row in tables["isr_changes"].groupBy("change").count().collect()
    }
    shutdowns = tables["controlled_shutdowns"]
    report.shutdown_total = shutdowns.count()
    report.shutdowns = shutdowns.orderBy("started", *SHUTDOWN_KEY).limit(SHUTDOWNS_LISTED).collect()
    report.longest_shutdowns = longest_shutdowns(shutdowns)
    report.timelines = collect_timelines(tables["partition_timelines"])
    report.replica_events = (
        tables["replica_state_events"]
        .groupBy("replica_state", "accepted")
        .count()
        .orderBy("replica_state", "accepted")
        .collect()
    )
    report.pairs = (
        tables["paired_exchanges"]
        .groupBy("api_name")
        .agg(
            F.count(F.lit(1)).alias("pairs"),
            F.percentile_approx("between_ms", PAIR_QUANTILES, aggregates.PERCENTILE_ACCURACY).alias("q"),
        )
        .orderBy("api_name")
        .collect()
    )
    report.slowest = aggregates.slowest_exchanges(tables["exchanges"], tables["partition_results"]).collect()
    report.other_traffic = (
        tables["other_traffic"]
        .groupBy("kind", "api_name")
        .agg(
            F.sum("connections").alias("connections"),
            F.sum("requests").alias("requests"),
            F.sum("responses").alias("responses"),
            F.sum(F.col("request_bytes") + F.col("response_bytes")).alias("bytes"),
            F.array_sort(F.collect_set("api_version")).alias("versions"),
        )
        .orderBy(F.col("requests").desc(), F.col("bytes").desc(), "kind", "api_name")
        .collect()
    )
    events = tables["fleet_events"]
    report.events = events.orderBy("time_ns", "broker_id", "event").limit(EVENT_POINTS).collect()
    report.event_counts = (
        events.groupBy("event")
        .agg(F.count(F.lit(1)).alias("events"), F.min("time_ns").alias("first_ns"), F.max("time_ns").alias("last_ns"))
        .orderBy(F.col("events").desc(), "event")
        .collect()
    )
    report.charts = draw(report)
    return report


#: A controlled shutdown's key (controlled_shutdowns: one row per source, broker and broker epoch).
SHUTDOWN_KEY = ["source", "broker_id", "broker_epoch"]


def longest_shutdowns(shutdowns: DataFrame, count: int = charts.MAX_BARS) -> list[Row]:
    """The `count` longest controlled shutdowns, the unfinished first (they lasted at least until
    the capture ended), ties by start, source, broker and epoch."""
    order: list[Column | str] = [F.col("duration_s").desc_nulls_first(), "started", *SHUTDOWN_KEY]
    return shutdowns.orderBy(*order).limit(count).collect()


def collect_timelines(timelines: DataFrame) -> list[Timeline]:
    """The most unstable partitions' timelines, each from the source that saw most of its granted
    states: those states (one row each, the request that first granted it) and its refused requests."""
    granted = F.col("partition_epoch_granted").isNotNull() & F.col("isr_after").isNotNull()
    seen = timelines.groupBy("rank", "topic", "partition", "source").agg(
        F.count(F.lit(1)).alias("rows"), F.sum(granted.cast("long")).alias("granted")
    )
    chosen, rows = chosen_sources(seen.orderBy("rank", F.col("granted").desc(), "source").collect())
    if not chosen:
        return []
    of_chosen = F.lit(False)
    for rank, row in chosen.items():
        of_chosen = of_chosen | ((F.col("rank") == rank) & (F.col("source") == row["source"]))
    mine = timelines.filter(of_chosen)
    first = F.min_by(F.struct(*STATE_FIELDS), "request_time_ns").alias("first")
    states = (
        mine.filter(granted)
        .groupBy("rank", "partition_epoch_granted", "leader_epoch_granted")
        .agg(first)
        .select("rank", "first.*")
        .orderBy("rank", "request_time_ns", "partition_epoch_granted", "leader_epoch_granted")
        .collect()
    )
    failed = mine.filter(F.col("error_code") != 0)
    refused_total = {row["rank"]: row["count"] for row in failed.groupBy("rank").count().collect()}
    order = Window.partitionBy("rank").orderBy("request_time_ns", "broker_id", "api_name")
    refused = (
        failed.withColumn("n", F.row_number().over(order))
        .filter(F.col("n") <= REFUSED_POINTS)
        .select("rank", "request_time_ns", "broker_id", "api_name", "error_name")
        .orderBy("rank", "request_time_ns", "broker_id", "api_name")
        .collect()
    )
    return timelines_of(chosen, rows, states, refused, refused_total)


def chosen_sources(seen: list[Row]) -> tuple[dict[int, Row], dict[int, int]]:
    """Per rank, the row of `seen` (rank, topic, partition, source, rows, granted per rank and
    source, ordered by rank, granted descending, source) of the source that saw the most granted
    states, and the rank's rows over every source."""
    chosen: dict[int, Row] = {}
    rows: dict[int, int] = {}
    for row in seen:
        chosen.setdefault(row["rank"], row)
        rows[row["rank"]] = rows.get(row["rank"], 0) + row["rows"]
    return chosen, rows


def timelines_of(
    chosen: dict[int, Row], rows: dict[int, int], states: list[Row], refused: list[Row], refused_total: dict[int, int]
) -> list[Timeline]:
    """The timelines, in rank order, from the chosen sources (`chosen_sources`), the chosen
    sources' states and refused requests (each row with its `rank`) and the refused per rank."""
    return [
        Timeline(
            rank,
            row["topic"],
            row["partition"],
            row["source"],
            rows[rank],
            [state for state in states if state["rank"] == rank],
            [point for point in refused if point["rank"] == rank],
            refused_total.get(rank, 0),
        )
        for rank, row in sorted(chosen.items())
    ]


#: What a timeline keeps of the row that first granted a state.
STATE_FIELDS = [
    "request_time_ns",
    "api_name",
    "direction",
    "broker_id",
    "leader",
    "leader_epoch_granted",
    "partition_epoch_granted",
    "isr_before",
    "isr_after",
    "isr_change",
]
