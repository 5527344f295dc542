"""The report in words: the console summary, and how the report writes times and APIs.

Purpose: `summary(report)` is the console's version of the report, one finding per line (the
page lists the same lines above its charts); `utc` and `api_label` write a time and an API the
same way in the summary, the page's tables and the charts' labels.

Rules:
- Times are shown in UTC, to the millisecond, computed in integers.
- The busiest APIs and the errors are listed by count, ties broken by name (then version, source
  and direction), so that equal counts always print in the same order.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from pyspark.sql import Row

if TYPE_CHECKING:
    from .report import Report


def utc(nanoseconds: int | None) -> str:
    if nanoseconds is None:
        return "-"
    # integer arithmetic: a double holds epoch nanoseconds to 256 ns only (a time just before a
    # second would print as the next one)
    moment = _EPOCH + datetime.timedelta(microseconds=nanoseconds // 1000)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def api_label(row: Row, several_sources: bool) -> str:
    """`API vN`, and its source when the report has several."""
    return f"{row['api_name']} v{row['api_version']}" + (f" ({row['source']})" if several_sources else "")


def summary(report: Report) -> list[str]:
    """The console summary, one finding per line."""
    sources = ", ".join(f"{source} {count:,}" for source, count in sorted(report.by_source.items()))
    lines = [
        f"exchanges: {report.exchanges:,} ({sources or 'none'}), {utc(report.first_ns)} .. {utc(report.last_ns)}",
        f"decode errors: {report.decode_errors:,}"
        + "".join(f"; {count:,} x {reason[:80]}" for reason, count in report.decode_reasons[:3]),
    ]
    lines += [_busiest_line(report), _errors_line(report)]
    bounced = [row for row in report.brokers if row["bounced"]]
    probes = [row for row in report.brokers if row["unregistered"]]
    probed = sum(row["exchanges"] for row in probes)
    stale_sent = sum(row["stale_incarnation_requests"] or 0 for row in report.brokers)
    stale_accepted = sum(row["stale_incarnation_accepted"] or 0 for row in report.brokers)
    lines.append(
        f"stale-epoch rejections: {report.stale_total:,}; bounced brokers: "
        + (", ".join(f"{row['broker_id']} (epochs {', '.join(map(str, row['epochs']))})" for row in bounced) or "none")
        + f"; requests from stale incarnations: {stale_sent:,} ({stale_accepted:,} accepted)"
        + (f"; probes from unregistered ids: {len(probes):,} ids, {probed:,} exchanges" if probes else "")
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
        f"{api_label(row, several_sources)} {row['exchanges']:,} (p99 {row['p99_ms']:.2f} ms)" for row in busiest
    )
    return f"busiest: {shown or '-'}"


def _errors_line(report: Report) -> str:
    errors: dict[str, int] = {}
    for row in report.errors:
        if row["error_code"] != 0:
            errors[row["error_name"]] = errors.get(row["error_name"], 0) + row["exchanges"]
    shown = ", ".join(f"{name} {n:,}" for name, n in sorted(errors.items(), key=lambda item: (-item[1], item[0])))
    return f"errors: {shown or 'none'}"
