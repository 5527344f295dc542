"""The report is for people: every chart is in the page, each a real picture; the page stands alone."""

from __future__ import annotations

import base64
import io
import re

from PIL import Image
from pyspark.sql import Row

from analytics import charts
from analytics.report import CHARTS, Report, rate_series, summary

from .conftest import Analysed

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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
