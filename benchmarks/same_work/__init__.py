"""A baseline that does the analytics job's work in one Python process without Spark or a JVM:
every table, row for row, and the same report.

Purpose: `same_work(capture_dirs, out, journals)` is what `python -m analytics CAPTURE_DIR...
--out OUT --journal J...` does, done the plain way, for benchmarks/analytics.py to measure the job
against: pyarrow reads the capture parts and `analytics.decode.decode_batch` decodes them (the
function the job's executors run), staged as Parquet as the job stages them (inputs.py); DuckDB,
in process, builds every table of `analytics.pipeline.TABLES` from them and writes each as
Parquet (tables.py); the report is analytics' own `Report`, its numbers queried from the tables
as written (report.py), rendered by analytics' own report_html and report_summary into
`report.html` and `summary.txt`. tests/analytics/test_same_work.py compares it with the job's
output, table by table and row for row.

Rules:
- Inputs: capture dirs and fleet journals, with the job's defaults otherwise (windows of
  `window_seconds`, 1 s unless given; no `--from`/`--to`). pcap and pcapng inputs are left out:
  the baseline reads capture dirs only (its `other_traffic` is empty, as the job's is for them).
- Row for row the job's tables, as the test shows on its scenario, with one difference in kind at
  scale: percentiles are exact where Spark's are approximate (tables.py).
- The output: `<out>/<table>/part-0.parquet` for each table (the job's `<out>/<table>/` holds
  Spark's part files), `<out>/report.html`, `<out>/summary.txt`; an existing `out` is replaced.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from analytics import report_html, report_summary
from analytics.read import check_capture_dirs

from .inputs import KIND_FILES, journal_rows, stage_decoded
from .report import build_report
from .tables import connect, sql_path, write_tables

#: The decoded rows, staged inside the output while the tables are built (the job's `_decoded`).
DECODED = "_decoded"


def same_work(
    capture_dirs: Sequence[str | Path], out: Path, journals: Sequence[Path] = (), window_seconds: float = 1.0
) -> list[str]:
    """Every table and the report of `capture_dirs` and `journals` into `out`; the summary's lines."""
    captures = check_capture_dirs(capture_dirs)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    staged = out / DECODED
    stage_decoded(captures, staged)
    con = connect()
    try:
        for name in KIND_FILES.values():  # the decoded rows of each kind, as the view of the file's name
            view = name.removesuffix(".parquet")
            con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{sql_path(staged / name)}')")
        con.register("journal_rows", journal_rows(journals))
        write_tables(con, out, window_seconds)
        report = build_report(con, [str(path) for path in captures], window_seconds)
    finally:
        con.close()
    shutil.rmtree(staged)
    (out / "report.html").write_text(report_html.html(report))
    lines = report_summary.summary(report)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    return lines
