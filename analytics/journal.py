"""The fleet's journal as events on the report's timelines: what the fleet did on purpose.

Purpose: `python -m analytics ... --journal PATH` (repeatable) reads the fleet's run journals
(JSON lines, `broker_sim/journal/` is the format's home; analytics reads the fields it needs
with Spark's JSON reader, never the fleet's code) into one table, `fleet_events`, whose rows the
report marks on its timelines, so a reader sees which crash, pause or stale replay came before
which rejection or fence.

Rules:
- An event is a row of the journal of one of these kinds, with its wall-clock time (ns: the same
  clock as the captures' times), its broker and a name:
  - `fault` (a fault the schedule injected): its `fault`, e.g. "crash", "pause", "drop-connection",
    "disk-failure", "controlled-shutdown";
  - `stale_replay` (a request sent with epochs known to be stale): "stale replay (<reason>)", with
    "accepted" in the detail when the controller took it;
  - `fenced` that the fleet did not cause (`intended` false): "fenced (unintended)";
  - `registered` of a broker registered before in the same journals (a bounce: a new
    incarnation, whose epoch fences the old one's requests): "re-registered", with its new
    broker epoch in the detail. A broker's first registration is not an event.
  Every other kind (registrations, acknowledged changes, observed states, ...) is not an event.
- Lines that are not JSON objects are dropped by Spark's reader (a crashed run's last line).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from .paths import read_path
from .transforms import timestamp_of

#: The journal fields the events need (the rest of a line is not read).
JOURNAL_FIELDS = StructType(
    [
        StructField("kind", StringType()),
        StructField("wall_ns", LongType()),
        StructField("broker", IntegerType()),
        StructField("fault", StringType()),
        StructField("duration_ms", DoubleType()),
        StructField("reason", StringType()),
        StructField("api", StringType()),
        StructField("accepted", BooleanType()),
        StructField("intended", BooleanType()),
        StructField("broker_epoch", LongType()),
    ]
)

EVENT_COLUMNS = ["time", "time_ns", "broker_id", "event", "detail"]


def fleet_events(spark: SparkSession, journals: Sequence[Path]) -> DataFrame:
    """The events of `journals` (see the module rules), in time order."""
    if not journals:
        return spark.createDataFrame([], "time timestamp, time_ns long, broker_id int, event string, detail string")
    rows = spark.read.schema(JOURNAL_FIELDS).json([read_path(path) for path in journals])
    return events_of(rows)


def events_of(rows: DataFrame) -> DataFrame:
    """Journal rows (`JOURNAL_FIELDS`) -> events (`EVENT_COLUMNS`)."""
    kind = F.col("kind")
    registrations = Window.partitionBy("broker", kind == "registered").orderBy("wall_ns")
    again = (kind == "registered") & (F.row_number().over(registrations) > 1)
    event = (
        F.when(kind == "fault", F.col("fault"))
        .when(kind == "stale_replay", F.concat(F.lit("stale replay ("), F.col("reason"), F.lit(")")))
        .when((kind == "fenced") & ~F.coalesce(F.col("intended"), F.lit(False)), F.lit("fenced (unintended)"))
        .when(again, F.lit("re-registered"))
    )
    detail = (
        F.when(
            kind == "fault",
            F.when(F.col("duration_ms") > 0, F.format_string("%.0f ms", F.col("duration_ms"))),
        )
        .when(
            kind == "stale_replay",
            F.concat(F.col("api"), F.when(F.col("accepted"), F.lit(", accepted")).otherwise(F.lit(""))),
        )
        .when(again, F.format_string("broker epoch %d", F.col("broker_epoch")))
    )
    return (
        rows.filter(F.col("wall_ns").isNotNull())
        .select(
            F.col("wall_ns").alias("time_ns"),
            F.col("broker").alias("broker_id"),
            event.alias("event"),
            detail.alias("detail"),
        )
        .filter(F.col("event").isNotNull())
        .withColumn("time", timestamp_of("time_ns"))
        .select(*EVENT_COLUMNS)
        .orderBy("time_ns", "broker_id", "event")
    )
