"""What a run shows: the live view on a terminal, periodic plain lines otherwise, and the summary.

Rules:
- Rendering is a pure function of a `FleetStats` (a live one, or one merged from the fleet
  processes' snapshots), the request rates and the run's clock; `show_progress` is the only
  part that waits, and it never writes to the stats.
- On a terminal (`Console.is_terminal`) a rich Live view is refreshed every `LIVE_REFRESH_S`;
  otherwise one plain line every `PLAIN_INTERVAL_S`, so that logs and CI output stay readable.
- Requests/s are rates over the last second or more (the last plain line's interval), from the
  differences of the counters.
- The summary's figures come from `summary_figures`, which the report stores as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import trio
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from broker_sim.shell.connection import peer_name
from broker_sim.shell.fleet import FleetConfig
from broker_sim.stats import FleetStats, failover_summary, percentile

LIVE_REFRESH_S = 0.5
PLAIN_INTERVAL_S = 5.0
RATE_INTERVAL_S = 1.0
TOP_ERRORS = 10  # the live view's longest list of error codes (the summary lists them all)
LAST_VIOLATIONS = 3


class RateMeter:
    """Requests per second per API over the last interval of at least `interval_s` (the rates of
    the previous interval until a new one is complete, so that a fast refresh does not flicker)."""

    def __init__(self, interval_s: float = 0.0) -> None:
        self.interval_s = interval_s
        self._counts: dict[str, int] = {}
        self._at: float | None = None
        self.rates: dict[str, float] = {}

    def update(self, counts: Mapping[str, int], now: float) -> dict[str, float]:
        if self._at is not None and (now - self._at < self.interval_s or now <= self._at):
            return self.rates
        if self._at is not None:
            interval = now - self._at
            self.rates = {api: (count - self._counts.get(api, 0)) / interval for api, count in counts.items()}
        self._counts, self._at = dict(counts), now
        return self.rates


@dataclass(frozen=True)
class RunClock:
    elapsed_s: float
    duration_s: float

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.duration_s - self.elapsed_s)

    def describe(self) -> str:
        return f"{self.elapsed_s:.0f}s elapsed, {self.remaining_s:.0f}s remaining of {self.duration_s:g}s"


def announce(console: Console, config: FleetConfig, processes: int) -> None:
    """The run's first line, once signals are handled (a signal from then on stops the run cleanly)."""
    spread = "" if processes == 1 else f" over {processes} processes"
    controllers = ",".join(peer_name(address) for address in config.controllers)
    console.print(
        f"fleet: brokers {config.first_broker_id}-{config.first_broker_id + config.brokers - 1}{spread} against "
        f"{controllers}, scenario {config.scenario}, seed {config.seed}, "
        f"{config.duration_s:g}s",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def live_view(stats: FleetStats, rates: Mapping[str, float], clock: RunClock) -> RenderableType:
    """The live view: a status line, then one small table per figure."""
    status = Text(f"fencer fleet: {clock.describe()}   violations so far: {len(stats.violations)}")
    if stats.violations:
        status.stylize("bold red")
    brokers = _table("brokers", "state", "count")
    for state, count in sorted(stats.brokers_by_state.items()):
        brokers.add_row(state, str(count))
    requests = _table("requests", "API", "total", "per s")
    for api_name, total in sorted(stats.requests_by_api.items()):
        requests.add_row(api_name, str(total), f"{rates.get(api_name, 0.0):.1f}")
    errors = _table("errors", "API:code", "count")
    for code, count in stats.errors_by_code.most_common(TOP_ERRORS):
        errors.add_row(code, str(count))
    stale = _table("stale replays", "", "count")
    stale.add_row("sent", str(stats.stale_replays_sent))
    stale.add_row("rejected", str(stats.stale_replays_rejected))
    parts: list[RenderableType] = [status, _side_by_side(brokers, requests, errors, stale)]
    for violation in stats.violations[-LAST_VIOLATIONS:]:
        parts.append(Text(f"violation: {violation}", style="red"))
    return Group(*parts)


def plain_line(stats: FleetStats, rates: Mapping[str, float], clock: RunClock) -> str:
    """One log line with the live view's figures."""
    brokers = " ".join(f"{state}={count}" for state, count in sorted(stats.brokers_by_state.items())) or "-"
    per_api = ", ".join(f"{api_name} {rate:.1f}" for api_name, rate in sorted(rates.items()) if rate > 0)
    return (
        f"[{clock.elapsed_s:5.0f}s/{clock.duration_s:g}s] brokers {brokers} | "
        f"requests/s {sum(rates.values()):.1f}{f' ({per_api})' if per_api else ''} | "
        f"errors {sum(stats.errors_by_code.values())} | "
        f"stale replays {stats.stale_replays_sent} sent, {stats.stale_replays_rejected} rejected | "
        f"violations {len(stats.violations)}"
    )


def summary_figures(stats: FleetStats) -> dict[str, Any]:
    """The figures of the summary table (and of the report's `summary`)."""
    return {
        "requests": {
            api_name: {
                "count": count,
                "p50_ms": _rounded(percentile(stats.latencies_ms.get(api_name, []), 0.50)),
                "p99_ms": _rounded(percentile(stats.latencies_ms.get(api_name, []), 0.99)),
            }
            for api_name, count in sorted(stats.requests_by_api.items())
        },
        "errors": dict(stats.errors_by_code.most_common()),
        "control_requests": dict(sorted(stats.control_requests_by_api.items())),
        "stale_replays": {"sent": stats.stale_replays_sent, "rejected": stats.stale_replays_rejected},
        "faults": dict(sorted(stats.faults.items())),
        "controller_switches": dict(sorted(stats.controller_switches.items())),
        "controller_faults": dict(sorted(stats.controller_faults.items())),
        "failovers": failover_summary(stats.failovers),
        "heartbeats": stats.heartbeats,
        "heartbeat_lateness_p99_ms": _rounded(percentile(stats.heartbeat_lateness_ms, 0.99)),
        "brokers_by_state": dict(sorted(stats.brokers_by_state.items())),
        "violations": len(stats.violations),
    }


def summary_table(figures: Mapping[str, Any]) -> RenderableType:
    """The end-of-run summary as rich tables (for a terminal)."""
    requests = _table("requests by API", "API", "count", "p50 ms", "p99 ms")
    for api_name, row in figures["requests"].items():
        requests.add_row(api_name, str(row["count"]), _ms(row["p50_ms"]), _ms(row["p99_ms"]))
    errors = _table("errors", "API:code", "count")
    for code, count in figures["errors"].items():
        errors.add_row(code, str(count))
    other = _table("run", "figure", "value", numeric=False)
    for name, value in _other_rows(figures):
        other.add_row(name, value)
    return Group(requests, _side_by_side(errors, other))


def summary_text(figures: Mapping[str, Any]) -> str:
    """The end-of-run summary as plain text (when stdout is not a terminal)."""
    lines = ["requests by API: count, p50 ms, p99 ms"]
    for api_name, row in figures["requests"].items():
        lines.append(f"  {api_name:<22} {row['count']:>9} {_ms(row['p50_ms']):>9} {_ms(row['p99_ms']):>9}")
    lines.append("errors:" if figures["errors"] else "errors: none")
    lines += [f"  {code:<50} {count:>9}" for code, count in figures["errors"].items()]
    lines += [f"{name}: {value}" for name, value in _other_rows(figures)]
    return "\n".join(lines)


async def show_progress(
    console: Console, current: Callable[[], FleetStats], duration_s: float, *, refresh_s: float | None = None
) -> None:
    """Show the run until cancelled: live on a terminal, plain lines otherwise."""
    meter = RateMeter(RATE_INTERVAL_S)
    started = trio.current_time()

    def frame() -> tuple[FleetStats, dict[str, float], RunClock]:
        stats, now = current(), trio.current_time()
        return stats, meter.update(stats.requests_by_api, now), RunClock(now - started, duration_s)

    if not console.is_terminal:
        meter.update(current().requests_by_api, started)
        while True:
            await trio.sleep(refresh_s or PLAIN_INTERVAL_S)
            console.print(plain_line(*frame()), markup=False, highlight=False, soft_wrap=True)
    with Live(console=console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False) as live:
        while True:
            live.update(live_view(*frame()), refresh=True)
            await trio.sleep(refresh_s or LIVE_REFRESH_S)


def _other_rows(figures: Mapping[str, Any]) -> list[tuple[str, str]]:
    stale = figures["stale_replays"]
    return [
        ("brokers", _pairs(figures["brokers_by_state"])),
        ("control requests received", _pairs(figures["control_requests"])),
        ("stale replays", f"{stale['sent']} sent, {stale['rejected']} rejected"),
        ("faults", _pairs(figures["faults"])),
        *([("controller switches", _pairs(figures["controller_switches"]))] if figures["controller_switches"] else []),
        *_quorum_rows(figures),
        ("heartbeats", str(figures["heartbeats"])),
        ("heartbeat lateness p99", f"{_ms(figures['heartbeat_lateness_p99_ms'])} ms"),
        ("violations (during the run)", str(figures["violations"])),
    ]


def _quorum_rows(figures: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A run with its own quorum: its controller faults and failovers (see `stats.failover_summary`)."""
    if not figures.get("controller_faults"):
        return []
    failovers = figures["failovers"]
    elected, served = failovers["elected_ms"], failovers["served_ms"]
    missing = [
        f"{count} {what}"
        for count, what in ((failovers["never_elected"], "never elected"), (failovers["never_served"], "never served"))
        if count
    ]
    return [
        ("controller faults", _pairs(figures["controller_faults"])),
        (
            "failovers",
            f"{failovers['faults']} faults, {failovers['of_the_leader']} of the leader: new leader elected after "
            f"p50 {_ms(elected['p50'])} ms, p99 {_ms(elected['p99'])} ms; brokers served again after "
            f"p50 {_ms(served['p50'])} ms, p99 {_ms(served['p99'])} ms"
            + (f" ({', '.join(missing)})" if missing else ""),
        ),
    ]


def _table(title: str, *columns: str, numeric: bool = True) -> Table:
    """A small table: a name column, then figures (right-aligned when `numeric`)."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for index, column in enumerate(columns):
        table.add_column(column, justify="right" if numeric and index > 0 else "left")
    return table


def _side_by_side(*tables: Table) -> Table:
    grid = Table.grid(padding=(0, 3))
    grid.add_row(*tables)
    return grid


def _pairs(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "none"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
