"""analytics: the PySpark job over fencer's capture directories (the daemon's and the fleet's).

Layout: schema (explicit schemas), read (capture dirs), decode + facts (frames -> rows with
`protocol`, in the executors), transforms + aggregates (pure DataFrame -> DataFrame), report (the
numbers collected), report_charts + charts (matplotlib), report_html + report_summary (one
self-contained HTML page, the console's lines), output (staged output dir), pipeline (the steps
in order), job (the command line). Imports `protocol` and pyspark, nothing of the controller or
the fleet (tests/test_rings.py).
"""
