"""The report as one self-contained HTML page: its summary, every chart, and tables of detail.

Purpose: `html(report)` renders the page: charts embedded as PNG data URIs (each in a figure with
id `chart-<id>`, in `CHARTS` order), no scripts, no links to fetch, so that it opens from disk.

Rules:
- Every value is escaped; integers have thousands separators, floats three decimals, a missing
  value is `-`.
- A table of the page that shows fewer rows than the output's table holds says so, and names
  that table.
"""

from __future__ import annotations

import base64
import html as markup
from typing import Any

from pyspark.sql import Row

from . import aggregates
from .report import CHARTS, Report, Timeline
from .report_summary import summary, utc


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
        if not r["unregistered"]
    ]  # fmt: skip
    probes = [r for r in report.brokers if r["unregistered"]]
    if probes:  # one row for every id that never registered: probes, not brokers of the cluster
        brokers.append(
            [f"probes from unregistered ids ({len(probes):,})", "", "no", sum(r["exchanges"] for r in probes),
             sum(r["stale_rejections"] or 0 for r in probes), "", ""]
        )  # fmt: skip
    shutdowns = [
        [r["source"], r["broker_id"], r["broker_epoch"], r["started"], r["completed"], r["duration_s"], r["requests"]]
        for r in report.shutdowns
    ]
    pairs = [[r["api_name"], r["pairs"], r["q"][0], r["q"][1]] for r in report.pairs]
    fleet = [[r["event"], r["events"], utc(r["first_ns"]), utc(r["last_ns"])] for r in report.event_counts]
    other = [
        [r["kind"], r["api_name"], r["versions"], r["connections"], r["requests"], r["responses"], r["bytes"]]
        for r in report.other_traffic
    ]
    slowest = [
        [utc(r["request_time_ns"]), r["latency_ms"], r["source"], r["direction"], r["api_name"], r["api_version"],
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
                utc(r["request_time_ns"]),
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
