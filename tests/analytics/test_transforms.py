"""The tables (analytics.transforms) on the scenario's captures, row by row (tests/analytics/scenario.py)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from analytics import transforms
from analytics.paths import read_path, write_path
from analytics.read import read_captures
from analytics.schema import decoded_spark_schema

from . import scenario
from .captures import T0_NS, write_capture

EXCHANGE = Row(
    "api_name", "source", "direction", "broker_id", "broker_epoch", "error_name", "latency_ms", "shutdown_state"
)


def test_exchanges_hold_one_row_per_exchange_with_its_broker_epoch_latency_and_error(story: DataFrame) -> None:
    table = transforms.exchanges(story)
    assert table.columns == transforms.EXCHANGE_COLUMNS
    expected = [
        EXCHANGE("BrokerRegistration", "controller", "inbound", 1, 10, "NONE", 1.0, None),
        EXCHANGE("BrokerRegistration", "controller", "inbound", 2, 11, "NONE", 1.0, None),
        EXCHANGE("BrokerRegistration", "controller", "inbound", 3, 12, "NONE", 1.0, None),
        EXCHANGE("BrokerHeartbeat", "controller", "inbound", 1, 10, "NONE", 2.0, None),
        EXCHANGE("BrokerHeartbeat", "controller", "inbound", 2, 11, "NONE", 4.0, None),
        EXCHANGE("CreateTopics", "controller", "inbound", None, None, "NONE", 1.0, None),
        # control requests: the broker is the one that registered the peer as its listener
        EXCHANGE("LeaderAndIsr", "controller", "outbound", 1, 10, "NONE", 1.0, None),
        EXCHANGE("LeaderAndIsr", "controller", "outbound", 2, 11, "NONE", 1.0, None),
        EXCHANGE("AlterPartition", "controller", "inbound", 1, 10, "NONE", 1.0, None),
        EXCHANGE("AlterPartition", "controller", "inbound", 1, 10, "NONE", 1.0, None),
        EXCHANGE("AlterPartition", "controller", "inbound", 1, 10, "INVALID_UPDATE_VERSION", 1.0, None),
        EXCHANGE("BrokerRegistration", "controller", "inbound", 2, 20, "NONE", 1.0, None),
        EXCHANGE("BrokerHeartbeat", "controller", "inbound", 2, 11, "STALE_BROKER_EPOCH", 1.0, None),
        EXCHANGE("AlterReplicaState", "controller", "inbound", 2, 20, "NONE", 1.0, None),
        EXCHANGE("AlterReplicaState", "controller", "inbound", 2, 20, "NONE", 1.0, None),
        EXCHANGE("StopReplica", "controller", "outbound", 3, 12, "FENCED_LEADER_EPOCH", 1.0, None),
        EXCHANGE("ControlledShutdown", "controller", "inbound", 3, 12, "NONE", 1.0, "requested"),
        EXCHANGE("BrokerHeartbeat", "controller", "inbound", 1, 10, "NONE", 1.0, "requested"),
        EXCHANGE("ControlledShutdown", "controller", "inbound", 3, 12, "NONE", 2.0, "complete"),
        EXCHANGE("BrokerHeartbeat", "controller", "inbound", 1, 10, "NONE", 1.0, "complete"),
        EXCHANGE("AlterPartition", "fleet", "outbound", 1, 10, "NONE", 2.5, None),
    ]
    assertDataFrameEqual(table.select(*EXCHANGE), expected)


def test_exchange_times_are_utc_timestamps_of_the_request(story: DataFrame) -> None:
    first = (
        transforms.exchanges(story)
        .orderBy("request_time_ns")
        .select(F.unix_micros("time").alias("micros"), "request_time_ns")
    )
    row = first.first()
    assert row is not None and row["request_time_ns"] == T0_NS and row["micros"] == T0_NS // 1000


PARTITION = Row(
    "api_name", "source", "broker_id", "topic", "partition", "error_name", "leader_epoch_asked",
    "leader_epoch_granted", "partition_epoch_asked", "partition_epoch_granted", "isr_requested", "isr_before",
    "isr_after", "isr_size", "replica_state",
)  # fmt: skip
FULL, SHRUNK = [1, 2, 3], [1, 2]


def orders_0(api: str, broker: int, error: str = "NONE", *, source: str = "controller", **values: object) -> Row:
    """An expected partition_results row of orders-0 (columns not given are null)."""
    fixed = {"api_name": api, "source": source, "broker_id": broker, "topic": "orders", "partition": 0}
    return PARTITION(
        *(values.get(name, fixed.get(name, error if name == "error_name" else None)) for name in PARTITION)
    )


def test_partition_results_hold_epochs_asked_and_granted_and_the_isr_before_and_after(story: DataFrame) -> None:
    table = transforms.partition_results(story)
    assert table.columns == transforms.PARTITION_COLUMNS
    granted = {"leader_epoch_asked": 0, "leader_epoch_granted": 0}
    expected = [
        orders_0("LeaderAndIsr", 1, leader_epoch_granted=0, partition_epoch_granted=0, isr_after=FULL, isr_size=3),
        orders_0(
            "LeaderAndIsr", 2, leader_epoch_granted=0, partition_epoch_granted=0, isr_before=FULL, isr_after=FULL,
            isr_size=3,
        ),
        # AlterPartition v2 names topics by id only: the name comes from the CreateTopics response
        orders_0(
            "AlterPartition", 1, **granted, partition_epoch_asked=0, partition_epoch_granted=1, isr_requested=SHRUNK,
            isr_before=FULL, isr_after=SHRUNK, isr_size=2,
        ),
        orders_0(
            "AlterPartition", 1, **granted, partition_epoch_asked=1, partition_epoch_granted=2, isr_requested=FULL,
            isr_before=SHRUNK, isr_after=FULL, isr_size=3,
        ),
        orders_0(
            "AlterPartition", 1, "INVALID_UPDATE_VERSION", leader_epoch_asked=0, partition_epoch_asked=1,
            isr_requested=SHRUNK, isr_before=FULL,
        ),
        # the fleet saw no earlier state of its own
        orders_0(
            "AlterPartition", 1, source="fleet", **granted, partition_epoch_asked=0, partition_epoch_granted=1,
            isr_requested=SHRUNK, isr_after=SHRUNK, isr_size=2,
        ),
        orders_0("AlterReplicaState", 2, isr_before=FULL, replica_state="OFFLINE"),
        orders_0("AlterReplicaState", 2, isr_before=FULL, replica_state="ONLINE"),
        orders_0("StopReplica", 3, "FENCED_LEADER_EPOCH", leader_epoch_asked=0, isr_before=FULL),
        # ControlledShutdown: the partitions its answer says remain
        orders_0("ControlledShutdown", 3, isr_before=FULL),
    ]  # fmt: skip
    assertDataFrameEqual(table.select(*PARTITION), expected)


def test_a_topic_known_only_by_its_id_keeps_the_id_as_its_label(spark: SparkSession, tmp_path: Path) -> None:
    write_capture(tmp_path, [scenario.alter_partition((1, 2), 0, 0, granted=1)])
    table = transforms.partition_results(read_captures(spark, [tmp_path]))
    assertDataFrameEqual(table.select("topic", "topic_id"), [Row(str(scenario.ORDERS_ID), str(scenario.ORDERS_ID))])


def test_decode_errors_hold_every_frame_that_did_not_decode_with_its_reason(
    spark: SparkSession, tmp_path: Path
) -> None:
    rows = [scenario.heartbeat(1, 10, 0), *scenario.corrupt_rows()]
    write_capture(tmp_path, rows)
    decoded = read_captures(spark, [tmp_path])
    errors = transforms.decode_errors(decoded).orderBy("request_time_ns").select("api_key", "correlation_id", "reason")
    reasons = errors.collect()
    assert [(row["api_key"], row["correlation_id"]) for row in reasons] == [(63, 77), (0, 0), (999, 78), (63, 79)]
    for row, start in zip(reasons, scenario.CORRUPT_REASONS, strict=True):
        assert row["reason"].startswith(start), row["reason"]
    # the answered heartbeat and the one whose response did not decode are exchanges; the rest are not
    assertDataFrameEqual(
        transforms.exchanges(decoded).select("correlation_id", "error_name"),
        [Row(correlation_id=rows[0].correlation_id, error_name="NONE"), Row(correlation_id=79, error_name=None)],
    )


def test_paired_exchanges_join_the_fleet_and_controller_rows_of_one_request(story: DataFrame) -> None:
    pairs = transforms.paired_exchanges(transforms.exchanges(story))
    expected = Row(
        api_name="AlterPartition",
        correlation_id=scenario.AP_200_CORRELATION,
        broker_id=1,
        sender_source="fleet",
        receiver_source="controller",
        request_transit_ms=0.5,
        sender_latency_ms=2.5,
        receiver_latency_ms=1.0,
        between_ms=1.5,
    )
    assertDataFrameEqual(pairs.select(*expected.__fields__), [expected])


def test_decoded_rows_written_by_sparks_committer_read_back_whole_by_kind(
    spark: SparkSession, story: DataFrame, story_dirs: list[Path], tmp_path: Path
) -> None:
    """What pipeline.run does with the decoded rows: Spark's Parquet writer, one directory per
    row kind, a `_SUCCESS` marker from the committer; read back, they are the decoded rows."""
    staged = tmp_path / "_decoded"
    read_captures(spark, story_dirs).write.partitionBy("row_kind").parquet(write_path(staged))
    assert (staged / "_SUCCESS").is_file()
    assert sorted(path.name for path in staged.iterdir() if path.is_dir()) == [f"row_kind={k}" for k in range(4)]
    back = spark.read.schema(decoded_spark_schema()).parquet(read_path(staged))
    assertDataFrameEqual(back.select(*story.columns), story)  # the partition column comes last


def test_decoding_nothing_still_leaves_readable_decoded_rows(
    spark: SparkSession, story_dirs: list[Path], tmp_path: Path
) -> None:
    staged = tmp_path / "_decoded"
    nothing = read_captures(spark, story_dirs, time_from_ns=0, time_to_ns=1)
    nothing.write.partitionBy("row_kind").parquet(write_path(staged))
    assert spark.read.schema(decoded_spark_schema()).parquet(read_path(staged)).count() == 0
