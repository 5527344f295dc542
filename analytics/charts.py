"""The report's charts, drawn with matplotlib from plain Python values, as PNG bytes.

Purpose: one function per chart of the report; each takes the few values it plots (already
collected from Spark by report.py) and returns a PNG. No pyplot: each chart is its own `Figure`
on an Agg canvas, so nothing global is touched and nothing needs a display.

Rules:
- A chart with nothing to plot is still a PNG: it says, in words, that the capture holds none of
  it (a report must never lose a section silently).
- Long category lists are cut to the largest `MAX_SERIES`/`MAX_BARS`, and the title says so.
- Ties are broken by name: the same values always draw the same picture (a set's order changes
  with each process's hash seed, a collected list's with Spark's partitioning).
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

MAX_SERIES = 10
MAX_BARS = 15
SIZE = (9.0, 4.2)
DPI = 100


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _empty(title: str, message: str) -> bytes:
    figure = Figure(figsize=(SIZE[0], 1.6))
    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.set_title(title)
    axes.text(0.5, 0.4, message, ha="center", va="center", fontsize=12, color="#555555")
    return _png(figure)


#: The fleet's events (seconds, broker id, event name), marked on the timelines.
Marks = Sequence[tuple[float, int | None, str]]
#: Event names given a colour and a legend entry of their own; the rest are "other fleet events".
MAX_EVENT_KINDS = 6
#: Vertical lines drawn on the request-rate chart at most (the earliest events).
MAX_EVENT_LINES = 200


def _event_kinds(marks: Marks) -> list[str]:
    counts = Counter(name for _, _, name in marks)
    return sorted(counts, key=lambda name: (-counts[name], name))[:MAX_EVENT_KINDS]


def _event_style(name: str, kinds: list[str]) -> tuple[str, str]:
    """(colour, legend label) of an event."""
    if name in kinds:
        return EVENT_COLOURS[kinds.index(name)], f"fleet: {name}"
    return "#7f7f7f", "fleet: other events"


EVENT_COLOURS = ["#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def request_rate_chart(series: dict[str, list[tuple[float, float]]], start_label: str, marks: Marks = ()) -> bytes:
    """Requests/s over time, one line per series (API, and source when several captured); the
    fleet's events as vertical lines (`marks`: the earliest `MAX_EVENT_LINES`)."""
    title = "Request rate by API"
    if not series:
        return _empty(title, "no exchanges in this capture")
    ranked = sorted(series, key=lambda name: (-sum(rate for _, rate in series[name]), name))
    if len(ranked) > MAX_SERIES:
        title += f" (the {MAX_SERIES} busiest of {len(ranked)})"
    figure = Figure(figsize=SIZE)
    axes = figure.add_subplot()
    for name in ranked[:MAX_SERIES]:
        points = sorted(series[name])
        axes.plot([x for x, _ in points], [y for _, y in points], marker="." if len(points) < 50 else None, label=name)
    kinds, labelled = _event_kinds(marks), set()
    for x, _, name in list(marks)[:MAX_EVENT_LINES]:
        colour, label = _event_style(name, kinds)
        axes.axvline(
            x, color=colour, alpha=0.5, linewidth=0.8, linestyle="--", label=None if label in labelled else label
        )
        labelled.add(label)
    axes.set_title(title)
    axes.set_xlabel(f"seconds since {start_label}")
    axes.set_ylabel("requests/s")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(figure)


def latency_chart(rows: Sequence[tuple[str, float, float, float]]) -> bytes:
    """p50/p95/p99 latency per API and version (label, p50, p95, p99), log scale."""
    title = "Latency percentiles (ms, log scale)"
    if not rows:
        return _empty(title, "no answered exchanges in this capture")
    rows = sorted(rows, key=lambda row: (-row[3], row[0]))[:MAX_BARS]
    figure = Figure(figsize=(SIZE[0], max(2.5, 0.45 * len(rows) + 1.2)))
    axes = figure.add_subplot()
    height = 0.27
    for offset, (index, name) in zip((-height, 0.0, height), enumerate(("p50", "p95", "p99")), strict=True):
        values = [max(row[index + 1], 1e-3) for row in rows]
        axes.barh([i + offset for i in range(len(rows))], values, height=height, label=name)
    axes.set_yticks(range(len(rows)), [row[0] for row in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("ms")
    axes.set_title(title)
    axes.grid(axis="x", alpha=0.3)
    axes.legend(fontsize=8)
    return _png(figure)


def error_heatmap(counts: dict[tuple[str, str], int]) -> bytes:
    """Exchanges per (API, error name), errors other than NONE, as a heat map with counts."""
    title = "Errors by API and code (exchanges, NONE left out)"
    if not counts:
        return _empty(title, "no error answers in this capture")
    apis = sorted({api for api, _ in counts})
    errors = sorted(
        {error for _, error in counts},
        key=lambda error: (-sum(n for (_, e), n in counts.items() if e == error), error),
    )
    grid = [[counts.get((api, error), 0) or math.nan for error in errors] for api in apis]
    figure = Figure(figsize=(max(6.0, 1.1 * len(errors) + 3), max(2.5, 0.5 * len(apis) + 1.8)))
    axes = figure.add_subplot()
    image = axes.imshow(grid, cmap="Reds", norm=LogNorm(vmin=0.5, vmax=max(counts.values()) + 1), aspect="auto")
    axes.set_xticks(range(len(errors)), errors, rotation=30, ha="right", fontsize=8)
    axes.set_yticks(range(len(apis)), apis, fontsize=8)
    for row, api in enumerate(apis):
        for column, error in enumerate(errors):
            if counts.get((api, error)):
                axes.text(column, row, f"{counts[(api, error)]:,}", ha="center", va="center", fontsize=8)
    figure.colorbar(image, ax=axes, label="exchanges")
    axes.set_title(title)
    return _png(figure)


#: Brokers given a row of their own on the stale-rejection timeline; the rest share one.
MAX_BROKER_ROWS = 30


def stale_timeline(
    points: Sequence[tuple[float, int, str]],
    start_label: str,
    bounced: set[int],
    marks: Marks = (),
    unregistered: frozenset[int] = frozenset(),
) -> bytes:
    """Stale-epoch rejections (seconds, broker id, error name) on a timeline, one row per broker
    (the `MAX_BROKER_ROWS` most rejected; the others in one row, so it reads at 1,000 brokers);
    rejections of `unregistered` ids (probes, no broker of the cluster) share one row of their own,
    last; the fleet's events (`marks`) as crosses on their broker's row, so a rejection can be read
    against the crash, pause or stale replay before it."""
    title = "Stale-epoch rejections per broker (* = bounced)"
    if not points:
        return _empty(title, "no stale-epoch rejections in this capture")
    counts = Counter(broker for _, broker, _ in points if broker not in unregistered)
    probes = len({broker for _, broker, _ in points if broker in unregistered})
    ranked = sorted(counts, key=lambda broker: (-counts[broker], broker))
    shown = sorted(ranked[:MAX_BROKER_ROWS])  # the most rejected brokers, one row each, in id order
    others = len(ranked) - len(shown)
    if others:
        title += f"\nthe {len(shown)} most rejected of {len(ranked)} brokers; the other {others} in one row"
    others_row = len(shown)
    probes_row = others_row + (1 if others else 0)
    rows = probes_row + (1 if probes else 0)

    row_of = {broker: index for index, broker in enumerate(shown)}

    def row(broker: int | None) -> int | None:
        """The row of a broker's points and crosses; None: it has none (no probe or "others" row)."""
        if broker in unregistered:
            return probes_row if probes else None
        if broker in row_of:
            return row_of[broker]
        return others_row if others and broker is not None else None

    figure = Figure(figsize=(SIZE[0], max(2.5, 0.4 * rows + 1.6)))
    axes = figure.add_subplot()
    for error in sorted({error for _, _, error in points}):
        chosen = [(x, y) for x, broker, name in points if name == error and (y := row(broker)) is not None]
        axes.scatter([x for x, _ in chosen], [y for _, y in chosen], s=14, alpha=0.7, label=error)
    kinds = _event_kinds(marks)
    crosses: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for x, broker, name in marks:
        if (y := row(broker)) is not None:
            crosses.setdefault(_event_style(name, kinds), []).append((x, y))
    for (colour, label), where in sorted(crosses.items(), key=lambda item: item[0][1]):
        axes.scatter([x for x, _ in where], [y for _, y in where], marker="x", s=36, color=colour, label=label)
    labels = [f"broker {broker}{' *' if broker in bounced else ''}" for broker in shown]
    if others:
        labels.append(f"{others} other brokers")
    if probes:
        labels.append(f"probes from unregistered ids ({probes})")
    axes.set_yticks(range(rows), labels, fontsize=8)
    axes.set_xlabel(f"seconds since {start_label}")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(figure)


def isr_churn_chart(rows: Sequence[tuple[str, int, int, int]]) -> bytes:
    """ISR shrinks, expansions and reassignments of the most unstable partitions (label, s, e, r)."""
    title = f"ISR churn: the {MAX_BARS} most unstable partitions"
    if not rows:
        return _empty("ISR churn", "no ISR changes in this capture")
    rows = list(rows)[:MAX_BARS]
    figure = Figure(figsize=(SIZE[0], max(2.5, 0.35 * len(rows) + 1.4)))
    axes = figure.add_subplot()
    left = [0] * len(rows)
    kinds = (("shrinks", "#d62728"), ("expansions", "#2ca02c"), ("reassignments", "#7f7f7f"))
    for index, (name, color) in enumerate(kinds):
        values: list[int] = [row[1:][index] for row in rows]
        axes.barh(range(len(rows)), values, left=left, color=color, label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    axes.set_yticks(range(len(rows)), [row[0] for row in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("ISR changes")
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _png(figure)


def shutdown_chart(rows: Sequence[tuple[str, float | None]], total: int | None = None) -> bytes:
    """Controlled-shutdown durations (label, seconds or None while unfinished), the longest first
    (as given: the unfinished, then the longest), of `total` shutdowns."""
    title = "Controlled-shutdown durations (s)"
    if not rows:
        return _empty(title, "no controlled shutdowns in this capture")
    rows = list(rows)[:MAX_BARS]
    total = len(rows) if total is None else total
    if total > len(rows):
        title += f": the {len(rows)} longest of {total:,}"
    longest = max((duration for _, duration in rows if duration is not None), default=1.0) or 1.0
    figure = Figure(figsize=(SIZE[0], max(2.5, 0.35 * len(rows) + 1.4)))
    axes = figure.add_subplot()
    for index, (_, duration) in enumerate(rows):
        if duration is None:
            axes.barh(index, longest, color="#cccccc", hatch="//")
            axes.text(longest, index, " unfinished", va="center", fontsize=8)
        else:
            axes.barh(index, duration, color="#1f77b4")
            axes.text(duration, index, f" {duration:.3f} s", va="center", fontsize=8)
    axes.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("seconds from the first request to 'nothing remains'")
    axes.set_title(title)
    return _png(figure)


#: The most unstable partitions drawn one under the other (the report's table lists them all).
MAX_TIMELINES = 5


class PartitionTimeline(NamedTuple):
    """One partition's timeline as drawn: its granted states in time order (seconds, leader, ISR,
    partition epoch) and its refused requests (seconds, asking broker, error)."""

    label: str
    states: list[tuple[float, int | None, list[int], int | None]]
    refused: list[tuple[float, int | None, str]]
    refused_total: int


def partition_timelines(
    timelines: Sequence[PartitionTimeline], start_label: str, end: float, marks: Marks = ()
) -> bytes:
    """One panel per partition: a row per broker, a bar where the broker was in the ISR (dark where it
    led), the partition epoch as a step line on the right axis, refused requests (a non-zero error) as
    red crosses on the row of their broker (the one that asked, or that a control request went to), and
    the fleet's events on the partition's brokers as triangles."""
    title = "The most unstable partitions over time"
    drawn = [timeline for timeline in timelines if timeline.states or timeline.refused]
    if not drawn:
        return _empty(title, "no granted partition states in this capture")
    brokers_of = [_timeline_brokers(timeline) for timeline in drawn]
    heights = [max(1.4, 0.32 * len(brokers) + 0.9) for brokers in brokers_of]
    figure = Figure(figsize=(SIZE[0], sum(heights) + 0.8))
    grid = figure.add_gridspec(len(drawn), 1, height_ratios=heights)
    kinds = _event_kinds(marks)
    first_axes = None
    for index, (timeline, brokers) in enumerate(zip(drawn, brokers_of, strict=True)):
        axes = figure.add_subplot(grid[index], sharex=first_axes)
        first_axes = first_axes or axes
        row_of = {broker: row for row, broker in enumerate(brokers)}
        member, leading = [], []
        for number, (at, leader, isr, _) in enumerate(timeline.states):
            until = timeline.states[number + 1][0] if number + 1 < len(timeline.states) else max(end, at)
            member += [[(at, row_of[broker]), (until, row_of[broker])] for broker in isr]
            if leader is not None and leader >= 0:
                leading.append([(at, row_of[leader]), (until, row_of[leader])])
        axes.add_collection(LineCollection(member, colors="#9ecae1", linewidths=6, label="in the ISR"))
        axes.add_collection(LineCollection(leading, colors="#08519c", linewidths=3, label="leader"))
        if timeline.refused:
            axes.scatter(
                [at for at, _, _ in timeline.refused],
                [row_of[-1 if broker is None else broker] for _, broker, _ in timeline.refused],
                marker="x", s=20, color="#d62728", label="refused request", zorder=3,
            )  # fmt: skip
        triangles: dict[tuple[str, str], list[tuple[float, int]]] = {}
        for at, broker, name in marks:
            if broker is not None and broker in row_of:
                triangles.setdefault(_event_style(name, kinds), []).append((at, row_of[broker]))
        for (colour, label), where in sorted(triangles.items(), key=lambda item: item[0][1]):
            axes.scatter([x for x, _ in where], [y for _, y in where], marker="v", s=30, color=colour, zorder=4,
                         label=label)  # fmt: skip
        epochs = [(at, epoch) for at, _, _, epoch in timeline.states if epoch is not None]
        if epochs:
            twin = axes.twinx()
            twin.step([at for at, _ in epochs] + [end], [e for _, e in epochs] + [epochs[-1][1]], where="post",
                      color="#636363", linewidth=1, label="partition epoch")  # fmt: skip
            twin.set_ylabel("partition epoch", fontsize=7)
            twin.tick_params(labelsize=7)
        labels = [f"broker {broker}" if broker >= 0 else "unknown" for broker in brokers]
        axes.set_yticks(range(len(brokers)), labels, fontsize=7)
        axes.set_ylim(-0.7, len(brokers) - 0.3)
        refused = f", {timeline.refused_total:,} refused" if timeline.refused_total else ""
        if timeline.refused_total > len(timeline.refused):
            refused += f" (the first {len(timeline.refused):,} drawn)"
        axes.set_title(f"{timeline.label}: {len(timeline.states):,} states{refused}", fontsize=9, loc="left")
        axes.grid(alpha=0.3, axis="x")
    assert first_axes is not None
    legend: dict[str, Artist] = {}  # one legend for every panel: what any of them shows
    for panel in figure.axes:
        for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    first_axes.legend(list(legend.values()), list(legend), fontsize=7, loc="upper left", bbox_to_anchor=(1.1, 1.0))
    first_axes.set_xlim(left=0, right=max(end, 1e-3) * 1.01)
    axes.set_xlabel(f"seconds since {start_label}")  # the last panel's
    figure.suptitle(title)
    return _png(figure)


def _timeline_brokers(timeline: PartitionTimeline) -> list[int]:
    """The brokers a timeline's rows name (ISR members, leaders, askers), in id order; -1 for a
    refused request whose broker is unknown."""
    brokers = {broker for _, _, isr, _ in timeline.states for broker in isr}
    brokers |= {leader for _, leader, _, _ in timeline.states if leader is not None and leader >= 0}
    brokers |= {-1 if broker is None else broker for _, broker, _ in timeline.refused}
    return sorted(brokers)
