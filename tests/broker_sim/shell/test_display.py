"""The live view, the plain lines and the summary show the run's figures; rates come from deltas."""

from __future__ import annotations

import io

import trio
import trio.testing
from rich.console import Console

from broker_sim.shell.display import (
    PLAIN_INTERVAL_S,
    RateMeter,
    RunClock,
    live_view,
    plain_line,
    show_progress,
    summary_figures,
    summary_table,
    summary_text,
)
from broker_sim.stats import FleetStats


def sample_stats() -> FleetStats:
    stats = FleetStats()
    stats.brokers_by_state.update({"unfenced": 7, "fenced": 2, "crashed": 1})
    for latency in (1.0, 2.0, 3.0, 40.0):
        stats.request("AlterPartition", latency, None)
    stats.request("AlterPartition", 5.0, "FENCED_LEADER_EPOCH")
    stats.request("BrokerHeartbeat", 0.5, None)
    stats.request("ControlledShutdown", None, "STALE_BROKER_EPOCH")
    stats.control_requests_by_api["LeaderAndIsr"] = 12
    stats.faults.update({"crash": 2, "pause": 1})
    stats.stale_replays_sent, stats.stale_replays_rejected = 9, 8
    stats.violations.append("stale replay accepted: broker 3 ControlledShutdown v2 correlation 44")
    stats.heartbeat(0.0)
    stats.heartbeat(250.0)
    return stats


def render(renderable: object, width: int = 200) -> str:
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_rates_are_the_counters_deltas_over_the_interval() -> None:
    meter = RateMeter()
    assert meter.update({"AlterPartition": 10}, now=100.0) == {}
    assert meter.update({"AlterPartition": 30, "BrokerHeartbeat": 4}, now=102.0) == {
        "AlterPartition": 10.0,
        "BrokerHeartbeat": 2.0,
    }
    assert meter.update({"AlterPartition": 30, "BrokerHeartbeat": 4}, now=103.0) == {
        "AlterPartition": 0.0,
        "BrokerHeartbeat": 0.0,
    }


def test_rates_wait_for_a_whole_interval() -> None:
    meter = RateMeter(interval_s=1.0)
    meter.update({"AlterPartition": 0}, now=10.0)
    assert meter.update({"AlterPartition": 5}, now=10.5) == {}  # half an interval: nothing yet
    assert meter.update({"AlterPartition": 20}, now=11.0) == {"AlterPartition": 20.0}
    assert meter.update({"AlterPartition": 30}, now=11.5) == {"AlterPartition": 20.0}  # kept until the next
    assert meter.update({"AlterPartition": 30}, now=12.0) == {"AlterPartition": 10.0}


def test_the_live_view_shows_every_figure() -> None:
    text = render(live_view(sample_stats(), {"AlterPartition": 12.5}, RunClock(elapsed_s=20, duration_s=60)))
    assert "20s elapsed, 40s remaining of 60s" in text
    assert "violations so far: 1" in text
    for state, count in (("unfenced", "7"), ("fenced", "2"), ("crashed", "1")):
        assert any(state in line and line.split(state, 1)[1].split()[1] == count for line in text.splitlines())
    assert "12.5" in text  # AlterPartition's rate
    assert "AlterPartition:FENCED_LEADER_EPOCH" in text
    assert "ControlledShutdown:STALE_BROKER_EPOCH" in text
    assert "sent" in text and "rejected" in text
    assert "stale replay accepted: broker 3 ControlledShutdown v2 correlation 44" in text


def test_the_plain_line_has_the_same_figures() -> None:
    line = plain_line(sample_stats(), {"AlterPartition": 12.5, "BrokerHeartbeat": 0.0}, RunClock(20, 60))
    assert "\n" not in line
    assert "brokers crashed=1 fenced=2 unfenced=7" in line
    assert "requests/s 12.5 (AlterPartition 12.5)" in line
    assert "errors 2" in line
    assert "stale replays 9 sent, 8 rejected" in line
    assert "violations 1" in line


def test_summary_figures_hold_percentiles_and_counts() -> None:
    figures = summary_figures(sample_stats())
    assert figures["requests"]["AlterPartition"] == {"count": 5, "p50_ms": 3.0, "p99_ms": 40.0}
    assert figures["requests"]["ControlledShutdown"] == {"count": 1, "p50_ms": None, "p99_ms": None}
    assert figures["heartbeat_lateness_p99_ms"] == 250.0
    assert figures["stale_replays"] == {"sent": 9, "rejected": 8}
    assert figures["faults"] == {"crash": 2, "pause": 1}
    assert figures["violations"] == 1


def test_the_summary_renders_as_a_table_and_as_plain_text() -> None:
    figures = summary_figures(sample_stats())
    for text in (render(summary_table(figures)), summary_text(figures)):
        assert "AlterPartition" in text and "3.00" in text and "40.00" in text
        assert "AlterPartition:FENCED_LEADER_EPOCH" in text
        assert "9 sent, 8 rejected" in text
        assert "crash 2, pause 1" in text
        assert "250.00 ms" in text
        assert "LeaderAndIsr 12" in text
    assert "┃" not in summary_text(figures)  # plain: no box drawing


async def test_plain_lines_come_every_interval_when_not_a_terminal(autojump_clock: trio.testing.MockClock) -> None:
    output = io.StringIO()
    console = Console(file=output, force_terminal=False, width=300)
    stats = FleetStats()
    assert not console.is_terminal

    async def traffic() -> None:  # ten requests in the middle of every second
        await trio.sleep(0.5)
        while True:
            stats.requests_by_api["BrokerHeartbeat"] += 10
            await trio.sleep(1)

    with trio.move_on_after(PLAIN_INTERVAL_S * 2 + 1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(traffic)
            await show_progress(console, lambda: stats, duration_s=60)
    lines = output.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[    5s/60s]") and "requests/s 10.0 (BrokerHeartbeat 10.0)" in lines[0]
    assert lines[1].startswith("[   10s/60s]")


async def test_the_live_view_refreshes_on_a_terminal(autojump_clock: trio.testing.MockClock) -> None:
    output = io.StringIO()
    console = Console(file=output, force_terminal=True, width=200, color_system=None)
    stats = sample_stats()
    with trio.move_on_after(1.2):
        await show_progress(console, lambda: stats, duration_s=60)
    shown = output.getvalue()
    assert "violations so far: 1" in shown and "AlterPartition:FENCED_LEADER_EPOCH" in shown
    assert shown.count("fencer fleet:") >= 2  # refreshed, not printed once
