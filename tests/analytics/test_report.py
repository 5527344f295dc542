"""The report is for people: every chart is in the page, each a real picture; the page stands alone."""

from __future__ import annotations

import base64
import io
import os
import re
import subprocess
import sys
from pathlib import Path

from PIL import Image
from pyspark.sql import Row, SparkSession

from analytics import charts
from analytics.report import CHARTS, Report, longest_shutdowns
from analytics.report_charts import rate_series
from analytics.report_summary import summary

from .conftest import Analysed

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parents[2]


def chart_images(page: str) -> dict[str, bytes]:
    found = re.findall(r"<figure id='chart-([a-z-]+)'><img alt='[^']+' src='data:image/png;base64,([^']+)'>", page)
    return {chart_id: base64.b64decode(data) for chart_id, data in found}


def distinct_colours(png: bytes) -> int:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 16)
    return len(colours) if colours is not None else 1 << 16


def test_the_page_holds_every_chart_each_a_non_trivial_image(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    images = chart_images(page)
    assert list(images) == [chart_id for chart_id, _ in CHARTS]
    for chart_id, png in images.items():
        assert png.startswith(PNG_SIGNATURE), chart_id
        width, height = Image.open(io.BytesIO(png)).size
        # a chart with data: taller than the "nothing to show" placeholder, and drawn in many colours
        assert width >= 600 and height >= 240, (chart_id, width, height)
        assert distinct_colours(png) >= 50, chart_id


def test_the_page_opens_from_disk_without_fetching_anything(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    assert "<script" not in page
    assert not re.search(r"(src|href)=['\"](?!data:)", page)


def test_the_report_says_how_many_frames_did_not_decode(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    summary = (analysed.out / "summary.txt").read_text()
    assert "decode errors: 4;" in summary
    assert "<p>4 frames did not decode (table decode_errors).</p>" in page
    assert "decode errors: 4;" in "\n".join(analysed.stdout)


def test_a_chart_with_nothing_to_show_says_so_in_a_picture() -> None:
    png = charts.shutdown_chart([])
    assert png.startswith(PNG_SIGNATURE) and distinct_colours(png) > 2


def test_the_request_rate_is_zero_in_windows_without_requests_not_a_line_across_them() -> None:
    second = 1_000_000_000
    report = Report(["capture"], 1.0, first_ns=10 * second, by_source={"controller": 9})
    report.rates = [
        Row(
            source="controller",
            direction="inbound",
            api_name=api,
            window_start_ns=start * second,
            requests_per_second=rate,
        )
        for api, start, rate in [("BrokerHeartbeat", 10, 5.0), ("BrokerHeartbeat", 13, 2.0), ("ApiVersions", 11, 1.0)]
    ]
    assert rate_series(report) == {
        "BrokerHeartbeat": [(0.0, 5.0), (1.0, 0.0), (2.0, 0.0), (3.0, 2.0)],
        "ApiVersions": [(0.0, 0.0), (1.0, 1.0), (2.0, 0.0), (3.0, 0.0)],
    }


def test_the_summary_names_the_source_of_each_busiest_api_when_both_sides_captured() -> None:
    report = Report(["a", "b"], 1.0, by_source={"controller": 20, "fleet": 20})
    report.latencies = [
        Row(source=source, direction="inbound", api_name="BrokerHeartbeat", api_version=1, exchanges=20, p99_ms=1.5)
        for source in ("controller", "fleet")
    ]
    busiest = next(line for line in summary(report) if line.startswith("busiest: "))
    assert busiest == (
        "busiest: BrokerHeartbeat v1 (controller) 20 (p99 1.50 ms), BrokerHeartbeat v1 (fleet) 20 (p99 1.50 ms)"
    )


def test_the_summary_breaks_ties_by_name_whatever_order_the_rows_come_in() -> None:
    """Spark returns rows in an order that depends on partitioning (a cluster's differs from a local
    run's): the busiest and errors lines must not follow it."""
    latency = [("LeaderAndIsr", 7, 2), ("ControlledShutdown", 3, 2), ("AlterReplicaState", 0, 2), ("Fetch", 1, 5)]
    errors = [("INVALID_UPDATE_VERSION", 95), ("STALE_BROKER_EPOCH", 77), ("FENCED_LEADER_EPOCH", 74)]
    lines = set()
    for order in (1, -1):
        report = Report(["capture"], 1.0, by_source={"controller": 11})
        report.latencies = [
            Row(source="controller", direction="inbound", api_name=api, api_version=version, exchanges=n, p99_ms=1.0)
            for api, version, n in latency[::order]
        ]
        report.errors = [
            Row(api_name="AlterPartition", error_code=code, error_name=name, exchanges=1)
            for name, code in errors[::order]
        ]
        lines.add(tuple(line for line in summary(report) if line.startswith(("busiest: ", "errors: "))))
    assert lines == {
        (
            "busiest: Fetch v1 5 (p99 1.00 ms), AlterReplicaState v0 2 (p99 1.00 ms), "
            "ControlledShutdown v3 2 (p99 1.00 ms), LeaderAndIsr v7 2 (p99 1.00 ms)",
            "errors: FENCED_LEADER_EPOCH 1, INVALID_UPDATE_VERSION 1, STALE_BROKER_EPOCH 1",
        )
    }


def test_a_chart_of_tied_values_is_the_same_picture_in_every_process() -> None:
    """Sets of names iterate in an order that changes with the process's hash seed; ties must not follow it."""
    draw = (
        "import hashlib; from analytics import charts; "
        "counts = {('AlterPartition', name): 1 for name in ('STALE_BROKER_EPOCH', 'FENCED_LEADER_EPOCH', "
        "'INVALID_UPDATE_VERSION', 'NOT_CONTROLLER')}; "
        "print(hashlib.sha256(charts.error_heatmap(counts)).hexdigest())"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", draw],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in ("1", "2", "3", "4")
    ]
    pictures = {run.communicate(timeout=120)[0] for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(pictures) == 1, pictures


def test_the_page_lists_the_slowest_exchanges_with_their_partitions(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    section = page.split("<h2>The 20 slowest exchanges</h2>", 1)[1].split("<h2>", 1)[0]
    rows = re.findall(r"<tr><td>(.*?)</td><td>([\d.,]+)</td>", section)
    assert 0 < len(rows) <= 20
    latencies = [float(latency.replace(",", "")) for _, latency in rows]
    assert latencies == sorted(latencies, reverse=True)
    assert re.search(r"<td>\d+: [^<]+-\d+", section), "no exchange lists its partitions"


def test_the_stale_timeline_reads_at_a_thousand_brokers() -> None:
    """One row per broker for the most rejected ones, the rest in one row: the picture stays a page,
    not a strip 400 inches tall (it was, before: 0.4 inch a broker)."""
    points = [(float(i % 60), broker, "STALE_BROKER_EPOCH") for broker in range(1000) for i in range(1 + broker % 7)]
    png = charts.stale_timeline(points, "t0", bounced={3})
    width, height = Image.open(io.BytesIO(png)).size
    assert height <= 2 * width, (width, height)
    assert distinct_colours(png) >= 50
    few = charts.stale_timeline([(1.0, 1, "STALE_BROKER_EPOCH"), (2.0, 2, "FENCED_LEADER_EPOCH")], "t0", bounced=set())
    assert Image.open(io.BytesIO(few)).size[1] < height


def test_the_page_says_what_the_fleet_did_from_its_journal(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    section = page.split("<h2>What the fleet did (its journals)</h2>", 1)[1].split("<h2>", 1)[0]
    events = re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td>", section)
    assert sorted(events) == sorted(
        [
            ("crash", "1"),
            ("pause", "1"),
            ("stale replay (previous-incarnation)", "1"),
            ("fenced (unintended)", "1"),
            ("re-registered", "1"),
        ]
    )


def test_the_page_shows_the_most_unstable_partition_state_by_state(analysed: Analysed) -> None:
    page = (analysed.out / "report.html").read_text()
    section = page.split("<h2>The most unstable partitions, state by state</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<h3>1. orders-0</h3>" in section
    rows = re.findall(r"<tr><td>[^<]+ UTC</td>((?:<td>[^<]*</td>)+)</tr>", section)
    cells = [re.findall(r"<td>([^<]*)</td>", row) for row in rows]
    # granted by, leader, leader epoch, partition epoch, ISR before, ISR after, change
    assert cells == [
        ["LeaderAndIsr to broker 1", "1", "0", "0", "-", "1, 2, 3", "-"],
        ["AlterPartition from broker 1", "1", "0", "1", "1, 2, 3", "1, 2", "shrink"],
        ["AlterPartition from broker 1", "1", "0", "2", "1, 2", "1, 2, 3", "expand"],
    ]
    # the replayed AlterPartition (INVALID_UPDATE_VERSION), and the StopReplica broker 3 refused
    assert "As controller saw it: 3 states; 2 refused (a non-zero error); 10 rows in the table" in section


def test_the_partition_timelines_read_at_scale_and_say_when_there_is_nothing() -> None:
    """Hundreds of states, refused requests and fleet events over the partitions' brokers: one panel per
    partition (at most `MAX_TIMELINES`), so the picture stays a page."""

    def timeline(number: int) -> charts.PartitionTimeline:
        states = [(i * 0.1, 1 + (i // 50) % 3, [1, 2, 3][: 1 + i % 3], i) for i in range(500)]
        refused = [(i * 0.3, 1 + i % 3, "INVALID_UPDATE_VERSION") for i in range(200)] + [(5.0, None, "UNKNOWN")]
        return charts.PartitionTimeline(f"orders-{number}", states, refused, 900)

    marks = [(float(i), 1 + i % 5, ("crash", "pause")[i % 2]) for i in range(40)]
    png = charts.partition_timelines([timeline(n) for n in range(charts.MAX_TIMELINES)], "t0", 50.0, marks)
    width, height = Image.open(io.BytesIO(png)).size
    assert height <= 2 * width, (width, height)
    assert distinct_colours(png) >= 50
    one = charts.partition_timelines([timeline(0)], "t0", 50.0)
    assert Image.open(io.BytesIO(one)).size[1] < height
    empty = charts.partition_timelines([], "t0", 1.0)
    assert Image.open(io.BytesIO(empty)).size[1] < Image.open(io.BytesIO(one)).size[1]


def test_the_shutdown_chart_shows_the_longest_the_unfinished_first(spark: SparkSession) -> None:
    rows = [("controller", broker, 1, broker, float(broker % 7) if broker % 10 else None) for broker in range(1, 41)]
    columns = "source string, broker_id int, broker_epoch long, started long, duration_s double"
    shutdowns = spark.createDataFrame(rows, columns)
    longest = longest_shutdowns(shutdowns, 6)
    assert [(row["broker_id"], row["duration_s"]) for row in longest] == [
        (10, None), (20, None), (30, None), (40, None), (6, 6.0), (13, 6.0)
    ]  # fmt: skip


def test_the_summary_says_what_a_pcap_held_besides_the_control_plane() -> None:
    report = Report(["broker.pcap"], 1.0)
    assert not any(line.startswith("other traffic") for line in summary(report))  # none: no line

    def row(kind: str, name: str | None, requests: int, responses: int, connections: int = 1) -> Row:
        return Row(kind=kind, api_name=name, connections=connections, requests=requests, responses=responses)

    report.other_traffic = [
        row("kafka", "Produce", 30_507, 30_000, 200), row("kafka", "Fetch", 1_200, 1_200),
        row("kafka", None, 0, 3), row("tls", None, 0, 0, 2), row("not-kafka", None, 0, 0),
    ]  # fmt: skip
    (line,) = [line for line in summary(report) if line.startswith("other traffic")]
    assert line == (
        "other traffic (counted, not decoded): Produce 30,507, Fetch 1,200, unmatched responses 3; "
        "2 tls connections; 1 not-kafka connections"
    )


def test_probes_from_unregistered_ids_share_one_row_of_the_stale_timeline() -> None:
    """Two brokers and 500 ids that never registered (a fleet's probes): three rows, not 31."""
    brokers = [(1.0, 1, "STALE_BROKER_EPOCH"), (2.0, 2, "FENCED_LEADER_EPOCH")]
    probes = [(3.0, 2_000_000_000 + n, "STALE_BROKER_EPOCH") for n in range(500)]
    unregistered = frozenset(broker for _, broker, _ in probes)
    grouped = charts.stale_timeline(brokers + probes, "t0", set(), (), unregistered)
    listed = charts.stale_timeline(brokers + probes, "t0", set())
    alone = charts.stale_timeline(brokers + probes[:1], "t0", set(), (), unregistered)
    height = Image.open(io.BytesIO(grouped)).size[1]
    assert height == Image.open(io.BytesIO(alone)).size[1]  # one row, whatever the number of ids
    assert height < Image.open(io.BytesIO(listed)).size[1]
