"""The fleet's journals as events (analytics.journal): a journal written by the fleet's own writer
(broker_sim.journal, the format's home) read back with Spark's JSON reader."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from analytics import charts
from analytics.journal import EVENT_COLUMNS, fleet_events
from broker_sim.journal import FaultInjected, Fenced, JournalWriter, Registered, StaleReplay

from .captures import T0_NS


def write_journal(path: Path) -> Path:
    writer = JournalWriter(path)
    writer.write_all(
        [
            Registered(wall_ns=T0_NS, broker=1, incarnation_id="i-1", broker_epoch=10),  # not an event
            FaultInjected(wall_ns=T0_NS + 5, broker=2, fault="crash", duration_ms=0.0),
            FaultInjected(wall_ns=T0_NS + 7, broker=3, fault="pause", duration_ms=1500.0),
            StaleReplay(
                wall_ns=T0_NS + 9, broker=2, api="AlterPartition", api_version=3, reason="previous-incarnation",
                stale_broker_epoch=11, current_broker_epoch=40, correlation_id=7, errors=[77], accepted=False,
            ),
            Fenced(wall_ns=T0_NS + 11, broker=3, broker_epoch=12, intended=True, longest_gap_ms=1600.0),
            Fenced(wall_ns=T0_NS + 12, broker=1, broker_epoch=10, intended=False, longest_gap_ms=9800.0),
            Registered(wall_ns=T0_NS + 13, broker=2, incarnation_id="i-2", broker_epoch=14),  # its first: not one
            Registered(wall_ns=T0_NS + 20, broker=1, incarnation_id="i-3", broker_epoch=21),  # a bounce
        ]
    )  # fmt: skip
    writer.close()
    with path.open("a", encoding="utf-8") as stream:
        stream.write('{"kind": "fault", "wall_ns": 1')  # a crashed run's last line, cut short
    return path


def test_faults_stale_replays_unintended_fences_and_bounces_are_the_events(spark: SparkSession, tmp_path: Path) -> None:
    events = fleet_events(spark, [write_journal(tmp_path / "journal.jsonl")])
    assert events.columns == EVENT_COLUMNS
    assertDataFrameEqual(
        events.select("time_ns", "broker_id", "event", "detail"),
        [
            Row(time_ns=T0_NS + 5, broker_id=2, event="crash", detail=None),
            Row(time_ns=T0_NS + 7, broker_id=3, event="pause", detail="1500 ms"),
            Row(time_ns=T0_NS + 9, broker_id=2, event="stale replay (previous-incarnation)", detail="AlterPartition"),
            Row(time_ns=T0_NS + 12, broker_id=1, event="fenced (unintended)", detail=None),
            Row(time_ns=T0_NS + 20, broker_id=1, event="re-registered", detail="broker epoch 21"),
        ],
        checkRowOrder=True,
    )
    assert fleet_events(spark, []).count() == 0


def test_the_timelines_mark_the_events_without_growing_with_them() -> None:
    points = [(float(i), 1 + i % 3, "STALE_BROKER_EPOCH") for i in range(30)]
    marks = [(float(i), 1 + i % 3, ("crash", "pause", "stale replay (x)")[i % 3]) for i in range(30)]
    many = marks + [(float(i % 30), 2, f"kind {i}") for i in range(50)]  # more kinds than colours
    for drawn in (
        charts.stale_timeline(points, "t0", set(), marks),
        charts.stale_timeline(points, "t0", set(), many),
        charts.request_rate_chart({"AlterPartition": [(float(i), 5.0) for i in range(30)]}, "t0", many),
    ):
        assert drawn.startswith(b"\x89PNG")
    plain = charts.stale_timeline(points, "t0", set())
    assert charts.stale_timeline(points, "t0", set(), marks) != plain  # the crosses are drawn
