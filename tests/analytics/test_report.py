"""The report is for people: every chart is in the page, each a real picture; the page stands alone."""

from __future__ import annotations

import base64
import io
import re

from PIL import Image

from analytics import charts
from analytics.report import CHARTS

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
