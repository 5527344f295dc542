"""The report: the few numbers a person wants, collected from the tables, as HTML and as text.

Purpose: `collect(tables, captures, window_seconds)` brings the small aggregates to the driver
(never a whole table); `html(report)` renders one self-contained page (charts embedded as PNG
data URIs, no scripts, no links to fetch) that opens from disk; `summary(report)` is the
console's version.

Rules:
- Everything here reads the aggregates, which are small by construction (windows x APIs, the
  most unstable partitions, brokers); rows of a large table are only ever counted.
- Chart ids (`CHARTS`) are fixed: tests and readers find each chart by its id.
- Times are shown in UTC, and charts count seconds from the capture's first request.
- Every collected list is ordered by its key columns (ties included) before it reaches the page:
  the order Spark returns rows in depends on partitioning (a cluster's differs from a local
  run's), and the summary's ties, the charts' series and the tables follow the list's order, so
  the same tables always make the same report.
"""

from __future__ import annotations

import base64
import datetime
import html as markup
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from . import aggregates, charts
from .aggregates import window_width_ns

#: (chart id, caption), in the page's order; the first is the README's picture.
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
    reasons = errors.groupBy("reason").count().orderBy(F.col("count").desc(), "reason").limit(10).collect()
    report.decode_reasons = [(row["reason"], row["count"]) for row in reasons]
    by_api = ["api_name", "source", "direction"]
    report.rates = tables["request_rates"].orderBy(*by_api, "window_start_ns").collect()
    report.latencies = tables["latency_percentiles"].orderBy("api_name", "api_version", "source", "direction").collect()
    report.errors = tables["error_counts"].orderBy(*by_api, "api_version", "error_code").collect()
    stale = tables["stale_rejections"].select("request_time_ns", "broker_id", "error_name")
    report.stale_total = stale.count()
    report.stale = stale.orderBy("request_time_ns", "broker_id", "error_name").limit(STALE_POINTS).collect()
    report.brokers = tables["broker_epochs"].orderBy("broker_id").collect()
    report.unstable = (
        tables["unstable_partitions"].orderBy(F.col("changes").desc(), "topic", "partition").limit(15).collect()
    )
    report.isr_changes = {
        row["change"]: row["count"] for row in tables["isr_changes"].groupBy("change").count().collect()
    }
    shutdowns = tables["controlled_shutdowns"]
    report.shutdown_total = shutdowns.count()
    report.shutdowns = shutdowns.orderBy("started", *SHUTDOWN_KEY).limit(200).collect()
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
        .agg(F.count(F.lit(1)).alias("pairs"), F.percentile_approx("between_ms", [0.5, 0.99], 10_000).alias("q"))
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
    chosen: dict[int, Row] = {}
    rows: dict[int, int] = {}
    for row in seen.orderBy("rank", F.col("granted").desc(), "source").collect():
        chosen.setdefault(row["rank"], row)
        rows[row["rank"]] = rows.get(row["rank"], 0) + row["rows"]
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


def _utc(nanoseconds: int | None) -> str:
    if nanoseconds is None:
        return "-"
    # integer arithmetic: a double holds epoch nanoseconds to 256 ns only (a time just before a
    # second would print as the next one)
    moment = _EPOCH + datetime.timedelta(microseconds=nanoseconds // 1000)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


MAX_FILLED_WINDOWS = 100_000  # a longer span is drawn from the windows that have traffic only


def rate_series(report: Report) -> dict[str, list[tuple[float, float]]]:
    """Requests/s per API (and source and direction when several sources were captured), as
    (seconds since the first exchange, rate) per window, every window from the report's first to
    its last included: a window without requests of an API is a 0, not a line drawn across it."""
    start = report.first_ns or 0
    several_sources = len(report.by_source) > 1
    window_ns = window_width_ns(report.window_seconds)
    rates: dict[str, dict[int, float]] = {}
    for row in report.rates:
        name = row["api_name"] + (f" ({row['source']}, {row['direction']})" if several_sources else "")
        rates.setdefault(name, {})[row["window_start_ns"]] = row["requests_per_second"]
    windows = sorted({window for by_window in rates.values() for window in by_window})
    if windows and window_ns > 0 and (windows[-1] - windows[0]) // window_ns < MAX_FILLED_WINDOWS:
        windows = list(range(windows[0], windows[-1] + 1, window_ns))
    return {
        name: [((window - start) / 1e9, by_window.get(window, 0.0)) for window in windows]
        for name, by_window in rates.items()
    }


def _api_label(row: Row, several_sources: bool) -> str:
    """`API vN`, and its source when the report has several."""
    return f"{row['api_name']} v{row['api_version']}" + (f" ({row['source']})" if several_sources else "")


def draw(report: Report) -> dict[str, bytes]:
    """Every chart of `CHARTS`, as PNG bytes."""
    start = report.first_ns or 0
    several_sources = len(report.by_source) > 1
    series = rate_series(report)
    latencies = [
        (_api_label(row, several_sources), row["p50_ms"], row["p95_ms"], row["p99_ms"]) for row in report.latencies
    ]
    error_cells: dict[tuple[str, str], int] = {}
    for row in report.errors:
        if row["error_code"] != 0:
            key = (row["api_name"], row["error_name"])
            error_cells[key] = error_cells.get(key, 0) + row["exchanges"]
    bounced = {row["broker_id"] for row in report.brokers if row["bounced"]}
    points = [((row["request_time_ns"] - start) / 1e9, row["broker_id"], row["error_name"]) for row in report.stale]
    points = [point for point in points if point[1] is not None]
    marks = [((row["time_ns"] - start) / 1e9, row["broker_id"], row["event"]) for row in report.events]
    churn = [
        (f"{row['topic']}-{row['partition']}", row["shrinks"], row["expansions"], row["reassignments"])
        for row in report.unstable
    ]
    shutdowns = [
        (f"broker {row['broker_id']} epoch {row['broker_epoch']} ({row['source']})", row["duration_s"])
        for row in report.longest_shutdowns
    ]
    timelines = [_timeline_drawn(timeline, start) for timeline in report.timelines[: charts.MAX_TIMELINES]]
    start_label = _utc(report.first_ns)
    end = ((report.last_ns or start) - start) / 1e9
    return {
        "request-rate": charts.request_rate_chart(series, start_label, marks),
        "latency": charts.latency_chart(latencies),
        "errors": charts.error_heatmap(error_cells),
        "stale-rejections": charts.stale_timeline(points, start_label, bounced, marks),
        "isr-churn": charts.isr_churn_chart(churn),
        "partition-timelines": charts.partition_timelines(timelines, start_label, end, marks),
        "shutdowns": charts.shutdown_chart(shutdowns, report.shutdown_total),
    }


def _timeline_drawn(timeline: Timeline, start: int) -> charts.PartitionTimeline:
    """A timeline as the chart takes it: seconds since `start`."""
    return charts.PartitionTimeline(
        f"{timeline.topic}-{timeline.partition} ({timeline.source})",
        [
            (
                (row["request_time_ns"] - start) / 1e9,
                row["leader"],
                list(row["isr_after"]),
                row["partition_epoch_granted"],
            )
            for row in timeline.states
        ],
        [((row["request_time_ns"] - start) / 1e9, row["broker_id"], row["error_name"]) for row in timeline.refused],
        timeline.refused_total,
    )


def summary(report: Report) -> list[str]:
    """The console summary, one finding per line."""
    sources = ", ".join(f"{source} {count:,}" for source, count in sorted(report.by_source.items()))
    lines = [
        f"exchanges: {report.exchanges:,} ({sources or 'none'}), {_utc(report.first_ns)} .. {_utc(report.last_ns)}",
        f"decode errors: {report.decode_errors:,}"
        + "".join(f"; {count:,} x {reason[:80]}" for reason, count in report.decode_reasons[:3]),
    ]
    lines += [_busiest_line(report), _errors_line(report)]
    bounced = [row for row in report.brokers if row["bounced"]]
    stale_sent = sum(row["stale_incarnation_requests"] or 0 for row in report.brokers)
    stale_accepted = sum(row["stale_incarnation_accepted"] or 0 for row in report.brokers)
    lines.append(
        f"stale-epoch rejections: {report.stale_total:,}; bounced brokers: "
        + (", ".join(f"{row['broker_id']} (epochs {', '.join(map(str, row['epochs']))})" for row in bounced) or "none")
        + f"; requests from stale incarnations: {stale_sent:,} ({stale_accepted:,} accepted)"
    )
    changes = ", ".join(f"{count:,} {kind}" for kind, count in sorted(report.isr_changes.items())) or "none"
    top = report.unstable[0] if report.unstable else None
    lines.append(
        f"ISR changes: {changes}"
        + (f"; most unstable: {top['topic']}-{top['partition']} ({top['changes']})" if top else "")
    )
    done = [row for row in report.shutdowns if row["duration_s"] is not None]
    lines.append(
        f"controlled shutdowns: {len(report.shutdowns)} ({len(done)} complete"
        + (f", longest {max(row['duration_s'] for row in done):.3f} s" if done else "")
        + ")"
    )
    events = ", ".join(
        f"{row['replica_state']} {row['count']:,}{'' if row['accepted'] else ' refused'}"
        for row in report.replica_events
    )
    lines.append(f"replica state events: {events or 'none'}")
    pairs = sum(row["pairs"] for row in report.pairs)
    lines.append(f"exchanges seen by both sides: {pairs:,}")
    if report.other_traffic:
        lines.append(_other_line(report))
    return lines


def _other_line(report: Report) -> str:
    """What a pcap held besides the control plane: the busiest APIs, and encrypted or non-Kafka connections."""
    kafka = [row for row in report.other_traffic if row["kind"] == "kafka"]
    shown = ", ".join(f"{row['api_name'] or 'unmatched responses'} {row['requests'] or row['responses']:,}"
                      for row in kafka[:6])  # fmt: skip
    more = f" and {len(kafka) - 6} more APIs" if len(kafka) > 6 else ""
    streams = [
        f"{row['connections']:,} {row['kind']} connections" for row in report.other_traffic if row["kind"] != "kafka"
    ]
    return "other traffic (counted, not decoded): " + "; ".join(filter(None, [shown + more, *streams]))


def _busiest_line(report: Report) -> str:
    several_sources = len(report.by_source) > 1
    busiest = sorted(
        report.latencies,
        key=lambda row: (-row["exchanges"], row["api_name"], row["api_version"], row["source"], row["direction"]),
    )[:6]
    shown = ", ".join(
        f"{_api_label(row, several_sources)} {row['exchanges']:,} (p99 {row['p99_ms']:.2f} ms)" for row in busiest
    )
    return f"busiest: {shown or '-'}"


def _errors_line(report: Report) -> str:
    errors: dict[str, int] = {}
    for row in report.errors:
        if row["error_code"] != 0:
            errors[row["error_name"]] = errors.get(row["error_name"], 0) + row["exchanges"]
    shown = ", ".join(f"{name} {n:,}" for name, n in sorted(errors.items(), key=lambda item: (-item[1], item[0])))
    return f"errors: {shown or 'none'}"


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{markup.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{markup.escape(_cell(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


#: Partitions of one exchange shown in the slowest-exchanges table (the count is always there).
PARTITIONS_SHOWN = 8


def _partitions(names: list[str]) -> str:
    """`n: a-0, b-1, ...` (the first `PARTITIONS_SHOWN`), or `-` for none."""
    if not names:
        return "-"
    more = f", ... ({len(names) - PARTITIONS_SHOWN} more)" if len(names) > PARTITIONS_SHOWN else ""
    return f"{len(names)}: {', '.join(names[:PARTITIONS_SHOWN])}{more}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "-" if value is None else str(value)


STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
figure{margin:1em 0}img{max-width:100%}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}th{background:#f4f4f4}
ul.summary li{margin:.2em 0}"""


def html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>fencer traffic report</title>",
        f"<style>{STYLE}</style></head><body><h1>fencer traffic report</h1>",
        f"<p>Captures: {markup.escape(', '.join(report.captures))}; windows of {report.window_seconds:g} s.</p>",
        "<ul class='summary'>" + "".join(f"<li>{markup.escape(line)}</li>" for line in summary(report)) + "</ul>",
    ]
    for chart_id, caption in CHARTS:
        encoded = base64.b64encode(report.charts[chart_id]).decode("ascii")
        parts.append(
            f"<h2>{markup.escape(caption)}</h2><figure id='chart-{chart_id}'>"
            f"<img alt='{markup.escape(caption)}' src='data:image/png;base64,{encoded}'></figure>"
        )
    parts.append(_details(report))
    parts.append("</body></html>")
    return "\n".join(parts)


def _details(report: Report) -> str:
    brokers = [
        [r["broker_id"], r["epochs"], "yes" if r["bounced"] else "no", r["exchanges"], r["stale_rejections"],
         r["stale_incarnation_requests"], r["stale_incarnation_accepted"]]
        for r in report.brokers
    ]  # fmt: skip
    shutdowns = [
        [r["source"], r["broker_id"], r["broker_epoch"], r["started"], r["completed"], r["duration_s"], r["requests"]]
        for r in report.shutdowns
    ]
    pairs = [[r["api_name"], r["pairs"], r["q"][0], r["q"][1]] for r in report.pairs]
    fleet = [[r["event"], r["events"], _utc(r["first_ns"]), _utc(r["last_ns"])] for r in report.event_counts]
    other = [
        [r["kind"], r["api_name"], r["versions"], r["connections"], r["requests"], r["responses"], r["bytes"]]
        for r in report.other_traffic
    ]
    slowest = [
        [_utc(r["request_time_ns"]), r["latency_ms"], r["source"], r["direction"], r["api_name"], r["api_version"],
         r["broker_id"], r["error_name"], _partitions(r["partitions"])]
        for r in report.slowest
    ]  # fmt: skip
    return "".join(
        [
            "<h2>Brokers</h2>",
            _table(
                [
                    "broker",
                    "epochs",
                    "bounced",
                    "exchanges",
                    "stale rejections",
                    "stale-incarnation requests",
                    "of them accepted",
                ],
                brokers,
            ),
            "<h2>The most unstable partitions, state by state</h2>",
            _timeline_tables(report.timelines),
            "<h2>Controlled shutdowns</h2>",
            _shown_of(len(shutdowns), report.shutdown_total, "the earliest", "controlled_shutdowns"),
            _table(["source", "broker", "epoch", "started", "completed", "seconds", "requests"], shutdowns),
            "<h2>What the fleet did (its journals)</h2>",
            _table(["event", "times", "first", "last"], fleet)
            if fleet
            else "<p>No journal given (<code>--journal</code>): the fleet's faults are not marked.</p>",
            f"<h2>The {aggregates.SLOWEST} slowest exchanges</h2>",
            _table(["time", "ms", "source", "direction", "API", "version", "broker", "error", "partitions"], slowest),
            "<h2>Other traffic (counted, not decoded)</h2>",
            _table(["kind", "API", "versions", "connections", "requests", "responses", "bytes"], other)
            if other
            else "<p>None: the inputs held control-plane traffic only (or no pcap was given).</p>",
            "<h2>Between broker and controller (exchanges both sides captured)</h2>",
            _table(["API", "pairs", "p50 ms outside the receiver", "p99 ms"], pairs),
            "<h2>Decode errors</h2>",
            f"<p>{report.decode_errors:,} frames did not decode (table decode_errors).</p>",
            _table(["reason", "frames"], [[reason, count] for reason, count in report.decode_reasons]),
        ]
    )


#: States listed per partition in the report's tables (the partition_timelines table has every row).
TIMELINE_TABLE_ROWS = 30


def _timeline_tables(timelines: list[Timeline]) -> str:
    """Per partition, its first `TIMELINE_TABLE_ROWS` granted states and the request that granted each."""
    if not timelines:
        return "<p>No partition changed its ISR in this capture.</p>"
    parts = []
    for timeline in timelines:
        states = timeline.states[:TIMELINE_TABLE_ROWS]
        rows = [
            [
                _utc(r["request_time_ns"]),
                _request(r),
                r["leader"],
                r["leader_epoch_granted"],
                r["partition_epoch_granted"],
                r["isr_before"],
                r["isr_after"],
                r["isr_change"],
            ]
            for r in states
        ]
        refused = f"; {timeline.refused_total:,} refused (a non-zero error)" if timeline.refused_total else ""
        parts.append(
            f"<h3>{timeline.rank}. {markup.escape(timeline.topic)}-{timeline.partition}</h3>"
            f"<p>As {markup.escape(timeline.source)} saw it: {len(timeline.states):,} states{refused}; "
            f"{timeline.rows:,} rows in the table partition_timelines (every source).</p>"
            + _shown_of(len(states), len(timeline.states), "the first", "partition_timelines")
            + _table(
                [
                    "time",
                    "granted by",
                    "leader",
                    "leader epoch",
                    "partition epoch",
                    "ISR before",
                    "ISR after",
                    "change",
                ],
                rows,
            )
        )
    return "".join(parts)


def _request(row: Row) -> str:
    """The request that granted a state: `AlterPartition from broker 2`, `LeaderAndIsr to broker 1`."""
    broker = row["broker_id"]
    if broker is None:
        return str(row["api_name"])
    towards = "to" if row["api_name"] in ("LeaderAndIsr", "StopReplica") else "from"
    return f"{row['api_name']} {towards} broker {broker}"


def _shown_of(shown: int, total: int, which: str, table: str) -> str:
    """`<p>` saying which rows a table shows when it shows fewer than there are."""
    if shown >= total:
        return ""
    return f"<p>{which.capitalize()} {shown:,} of {total:,} (table {table} has them all).</p>"
