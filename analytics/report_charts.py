"""The report's charts: what each chart of `CHARTS` plots, shaped from the collected numbers, then drawn.

Purpose: `draw(report)` gives every chart as PNG bytes, charts.py drawing each from plain
values; `rate_series` is the request-rate chart's lines.

Rules:
- Charts count seconds from the capture's first request, whose time (UTC) labels the axis.
- A rate line has a point for every window from the first to the last, 0 where the API had no
  requests, unless that span is `MAX_FILLED_WINDOWS` windows or more (then the windows with
  traffic only).
- With several sources captured, a rate line names its source and direction, a latency bar its
  source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import charts
from .aggregates import window_width_ns
from .report_summary import api_label, utc

if TYPE_CHECKING:
    from .report import Report, Timeline

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


def draw(report: Report) -> dict[str, bytes]:
    """Every chart of `CHARTS`, as PNG bytes."""
    start = report.first_ns or 0
    several_sources = len(report.by_source) > 1
    series = rate_series(report)
    latencies = [
        (api_label(row, several_sources), row["p50_ms"], row["p95_ms"], row["p99_ms"]) for row in report.latencies
    ]
    error_cells: dict[tuple[str, str], int] = {}
    for row in report.errors:
        if row["error_code"] != 0:
            key = (row["api_name"], row["error_name"])
            error_cells[key] = error_cells.get(key, 0) + row["exchanges"]
    bounced = {row["broker_id"] for row in report.brokers if row["bounced"]}
    unregistered = frozenset(row["broker_id"] for row in report.brokers if row["unregistered"])
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
    start_label = utc(report.first_ns)
    end = ((report.last_ns or start) - start) / 1e9
    return {
        "request-rate": charts.request_rate_chart(series, start_label, marks),
        "latency": charts.latency_chart(latencies),
        "errors": charts.error_heatmap(error_cells),
        "stale-rejections": charts.stale_timeline(points, start_label, bounced, marks, unregistered),
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
