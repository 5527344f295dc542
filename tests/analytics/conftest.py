"""One local SparkSession for every analytics test (Spark's testing guide: session-scoped).

`local[2]` (the machine's two cores), two shuffle partitions (test frames are tiny; the default
200 would cost seconds per aggregate), no UI, UTC, and the Python workers on this interpreter.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from analytics.job import workers_import_this_code


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    workers_import_this_code()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("fencer-analytics-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
