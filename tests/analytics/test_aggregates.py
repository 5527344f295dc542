"""The aggregates (analytics.aggregates) on the scenario's captures (tests/analytics/scenario.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from analytics import aggregates, transforms
from analytics.read import read_captures
from protocol.error_codes import ErrorCode

from . import scenario
from .captures import T0_NS, write_capture


@pytest.fixture(scope="module")
def exchanges(story: DataFrame) -> DataFrame:
    return transforms.exchanges(story).cache()


@pytest.fixture(scope="module")
def partitions(story: DataFrame) -> DataFrame:
    return transforms.partition_results(story).cache()


def test_request_rates_count_requests_per_window_source_direction_and_api(exchanges: DataFrame) -> None:
    rates = aggregates.request_rates(exchanges, 1.0)
    second = 1_000_000_000
    rate = Row("window_start_ns", "source", "direction", "api_name", "requests", "requests_per_second")
    expected = [
        rate(T0_NS, "controller", "inbound", "BrokerRegistration", 4, 4.0),
        rate(T0_NS, "controller", "inbound", "BrokerHeartbeat", 4, 4.0),
        rate(T0_NS, "controller", "inbound", "CreateTopics", 1, 1.0),
        rate(T0_NS, "controller", "inbound", "AlterPartition", 3, 3.0),
        rate(T0_NS, "controller", "inbound", "AlterReplicaState", 2, 2.0),
        rate(T0_NS, "controller", "inbound", "ControlledShutdown", 1, 1.0),
        rate(T0_NS, "controller", "outbound", "LeaderAndIsr", 2, 2.0),
        rate(T0_NS, "controller", "outbound", "StopReplica", 1, 1.0),
        rate(T0_NS, "fleet", "outbound", "AlterPartition", 1, 1.0),
        rate(T0_NS + second, "controller", "inbound", "ControlledShutdown", 1, 1.0),
        rate(T0_NS + 2 * second, "controller", "inbound", "BrokerHeartbeat", 1, 1.0),
    ]
    assertDataFrameEqual(rates.select(*rate), expected)
    halves = aggregates.request_rates(exchanges, 0.5).filter("api_name = 'BrokerHeartbeat'")
    assertDataFrameEqual(
        halves.select("window_start_ns", "requests", "requests_per_second"),
        [Row(T0_NS, 3, 6.0), Row(T0_NS + second // 2, 1, 2.0), Row(T0_NS + 5 * second // 2, 1, 2.0)],
    )


def test_latency_percentiles_per_api_and_version(exchanges: DataFrame) -> None:
    latencies = aggregates.latency_percentiles(exchanges)
    # heartbeats: 2, 4, 1, 1, 1 ms -> sorted 1 1 1 2 4: p50 is the 3rd, p95 and p99 the 5th
    heartbeats = latencies.filter("api_name = 'BrokerHeartbeat'").select(
        "api_version", "exchanges", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms"
    )
    assertDataFrameEqual(heartbeats, [Row(1, 5, 1.0, 4.0, 4.0, 1.8, 4.0)])
    shutdowns = latencies.filter("api_name = 'ControlledShutdown'").select("exchanges", "p50_ms", "p99_ms")
    assertDataFrameEqual(shutdowns, [Row(2, 1.0, 2.0)])
    fleet = latencies.filter("source = 'fleet'").select("direction", "api_name", "api_version", "p50_ms")
    assertDataFrameEqual(fleet, [Row("outbound", "AlterPartition", 2, 2.5)])


def test_error_counts_per_api_version_and_code(exchanges: DataFrame) -> None:
    errors = aggregates.error_counts(exchanges).filter("source = 'controller'")
    assertDataFrameEqual(
        errors.select("api_name", "api_version", "error_code", "error_name", "exchanges"),
        [
            Row("BrokerRegistration", 3, 0, "NONE", 4),
            Row("BrokerHeartbeat", 1, 0, "NONE", 4),
            Row("BrokerHeartbeat", 1, 77, "STALE_BROKER_EPOCH", 1),
            Row("CreateTopics", 7, 0, "NONE", 1),
            Row("LeaderAndIsr", 7, 0, "NONE", 2),
            Row("AlterPartition", 2, 0, "NONE", 2),
            Row("AlterPartition", 2, 95, "INVALID_UPDATE_VERSION", 1),
            Row("AlterReplicaState", 0, 0, "NONE", 2),
            Row("StopReplica", 3, 74, "FENCED_LEADER_EPOCH", 1),
            Row("ControlledShutdown", 3, 0, "NONE", 2),
        ],
    )


def test_broker_epochs_flag_the_bounced_broker_and_its_stale_incarnation(exchanges: DataFrame) -> None:
    brokers = aggregates.broker_epochs(exchanges)
    columns = ["broker_id", "epochs", "incarnations", "bounced", "exchanges", "stale_rejections"]
    columns += ["stale_incarnation_requests", "stale_incarnation_accepted"]
    assertDataFrameEqual(
        brokers.select(*columns),
        [
            Row(1, [10], 1, False, 9, 1, 0, 0),
            Row(2, [11, 20], 2, True, 7, 1, 1, 0),
            Row(3, [12], 1, False, 4, 1, 0, 0),
        ],
    )


def test_stale_rejections_name_the_broker_its_epochs_and_the_partitions_refused(
    exchanges: DataFrame, partitions: DataFrame
) -> None:
    rejections = aggregates.stale_rejections(exchanges, partitions)
    stale = Row(
        "api_name", "broker_id", "broker_epoch", "newest_broker_epoch", "error_name", "partitions_rejected",
        "bounced_broker", "stale_incarnation",
    )  # fmt: skip
    assertDataFrameEqual(
        rejections.select(*stale),
        [
            stale("AlterPartition", 1, 10, 10, "INVALID_UPDATE_VERSION", 1, False, False),
            stale("BrokerHeartbeat", 2, 11, 20, "STALE_BROKER_EPOCH", 0, True, True),
            stale("StopReplica", 3, 12, 12, "FENCED_LEADER_EPOCH", 1, False, False),
        ],
    )
    per_window = aggregates.stale_rejections_per_window(rejections, 1.0)
    assertDataFrameEqual(
        per_window.select("broker_id", "error_name", "rejections"),
        [Row(1, "INVALID_UPDATE_VERSION", 1), Row(2, "STALE_BROKER_EPOCH", 1), Row(3, "FENCED_LEADER_EPOCH", 1)],
    )


def test_isr_changes_count_each_granted_state_once_whoever_saw_it(partitions: DataFrame) -> None:
    # states: epoch 0 [1,2,3] (LeaderAndIsr to two brokers), epoch 1 [1,2] (seen by fleet and controller), epoch 2
    changes = aggregates.isr_changes(partitions)
    assertDataFrameEqual(
        changes.select("request_time_ns", "topic", "partition", "partition_epoch", "isr_before", "isr_after", "change"),
        [
            Row(T0_NS + 199_500_000, "orders", 0, 1, [1, 2, 3], [1, 2], "shrink"),
            Row(T0_NS + 300_000_000, "orders", 0, 2, [1, 2], [1, 2, 3], "expand"),
        ],
    )
    unstable = aggregates.unstable_partitions(changes)
    assertDataFrameEqual(
        unstable.select("topic", "partition", "changes", "shrinks", "expansions", "reassignments"),
        [Row("orders", 0, 2, 1, 1, 0)],
    )


def test_controlled_shutdowns_run_from_the_first_request_to_nothing_remaining(exchanges: DataFrame) -> None:
    shutdowns = aggregates.controlled_shutdowns(exchanges)
    assertDataFrameEqual(
        shutdowns.select("source", "broker_id", "broker_epoch", "duration_s", "requests", "apis"),
        [
            # ControlledShutdown at 600 ms; nothing remains in the answer at 1600 + 2 ms
            Row("controller", 3, 12, 1.002, 2, ["ControlledShutdown"]),
            # WantShutDown at 700 ms; ShouldShutDown in the answer at 2700 + 1 ms
            Row("controller", 1, 10, 2.001, 2, ["BrokerHeartbeat"]),
        ],
    )


def test_replica_state_events_list_offline_and_online_reports(partitions: DataFrame) -> None:
    events = aggregates.replica_state_events(partitions)
    assertDataFrameEqual(
        events.select("broker_id", "broker_epoch", "topic", "partition", "replica_state", "error_name", "accepted"),
        [Row(2, 20, "orders", 0, "OFFLINE", "NONE", True), Row(2, 20, "orders", 0, "ONLINE", "NONE", True)],
    )


def test_the_slowest_exchanges_come_with_the_partitions_they_named(exchanges: DataFrame, partitions: DataFrame) -> None:
    key = aggregates.EXCHANGE_KEY
    rows = [row for row in exchanges.collect() if row["latency_ms"] is not None]
    rows.sort(key=lambda row: (-row["latency_ms"], *(row[name] for name in key)))
    named: dict[tuple[object, ...], list[str]] = {}
    for row in partitions.collect():
        named.setdefault(tuple(row[name] for name in key), []).append(f"{row['topic']}-{row['partition']}")
    for count in (3, 100):
        got = aggregates.slowest_exchanges(exchanges, partitions, count).collect()
        expected = rows[:count]
        assert [tuple(row[name] for name in key) for row in got] == [
            tuple(row[name] for name in key) for row in expected
        ]
        assert [row["latency_ms"] for row in got] == [row["latency_ms"] for row in expected]
        for row in got:
            assert row["partitions"] == sorted(named.get(tuple(row[name] for name in key), []))
    assert any(row["partitions"] for row in aggregates.slowest_exchanges(exchanges, partitions, 100).collect())


def test_partition_timelines_hold_every_row_of_the_most_unstable_partitions(
    spark: SparkSession, partitions: DataFrame
) -> None:
    unstable = aggregates.unstable_partitions(aggregates.isr_changes(partitions))
    timelines = aggregates.partition_timelines(partitions, unstable)
    assert timelines.columns == aggregates.TIMELINE_COLUMNS
    orders = partitions.filter("topic = 'orders' and partition = 0")
    assert timelines.count() == orders.count() > 0  # every source's rows of the one unstable partition
    assert {row["rank"] for row in timelines.collect()} == {1}
    changed = timelines.filter("isr_change is not null").orderBy("request_time_ns")
    assertDataFrameEqual(
        changed.select(
            "source", "api_name", "broker_id", "partition_epoch_granted", "isr_before", "isr_after", "isr_change"
        ),
        [
            Row("controller", "AlterPartition", 1, 1, [1, 2, 3], [1, 2], "shrink"),
            Row("controller", "AlterPartition", 1, 2, [1, 2], [1, 2, 3], "expand"),
        ],
        checkRowOrder=True,
    )
    refused = timelines.filter("error_name = 'INVALID_UPDATE_VERSION'")
    assert refused.select("api_name", "partition_epoch_asked", "isr_after").collect() == [
        Row("AlterPartition", 1, None)
    ]


def test_partition_timelines_rank_by_changes_then_topic_and_partition(
    spark: SparkSession, partitions: DataFrame
) -> None:
    ranking = spark.createDataFrame(
        [("zeta", 0, 3), ("alpha", 7, 9), ("orders", 0, 3), ("alpha", 1, 3)],
        "topic string, partition int, changes long",
    )
    # alpha-7 first (most changes), then the ties by name: alpha-1, orders-0, zeta-0
    top = aggregates.partition_timelines(partitions, ranking, count=3).select("topic", "partition", "rank")
    ranks = {(row["topic"], row["partition"]): row["rank"] for row in top.collect()}
    assert ranks == {("orders", 0): 3}  # only orders-0 has rows; it is third of the top 3
    assert aggregates.partition_timelines(partitions, ranking, count=2).count() == 0  # orders-0 is not in the top 2


def test_ids_never_answered_none_are_unregistered_probes_and_never_bounced(spark: SparkSession, tmp_path: Path) -> None:
    """A broker registered and heartbeating; a probe id refused under two epochs (it would have
    "bounced"); a negative id refused, though its AlterPartition was answered NONE at the top level
    (its refusals are per partition)."""
    stale = ErrorCode.STALE_BROKER_EPOCH
    write_capture(
        tmp_path / "capture",
        [
            scenario.registration(1, 10, 0),
            scenario.heartbeat(1, 10, 5),
            scenario.heartbeat(2_000_000_001, 5, 10, error=stale),
            scenario.heartbeat(2_000_000_001, 6, 20, error=stale),
            scenario.heartbeat(-1, 1, 30, error=stale),
            scenario.alter_partition((1,), 1, 40, granted=None, broker=-1),
        ],
    )
    exchanges = transforms.exchanges(read_captures(spark, [tmp_path / "capture"]))
    brokers = aggregates.broker_epochs(exchanges).select("broker_id", "incarnations", "unregistered", "bounced")
    assertDataFrameEqual(
        brokers,
        [Row(-1, 2, True, False), Row(1, 1, False, False), Row(2_000_000_001, 2, True, False)],
    )
