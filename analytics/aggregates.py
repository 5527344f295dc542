"""The job's aggregates, as pure functions over the tables of transforms.py.

Purpose: what a person studying a control plane asks, one function each: traffic per API over
time, latency percentiles, error codes, stale-epoch rejections and the brokers that bounced, ISR
churn and the timelines of the most unstable partitions, controlled-shutdown durations,
offline/online replica events.

Rules:
- Percentiles are Spark's `percentile_approx` with accuracy `PERCENTILE_ACCURACY`: each is a
  latency that occurs in the data, whose rank in the sorted latencies of its group is within
  about n / PERCENTILE_ACCURACY of the exact rank ceil(p * n) (n = the group's exchanges; the
  partitions' summaries are merged, and a merge may cost a rank more): exact for the small groups
  of the tests, a rank off at times from a few thousand on (the p99 of 8,324 heartbeats came out
  at rank 8,240, not 8,241, against the same-work baseline's exact percentiles).
- Rows are grouped by `source` wherever both sides may have captured the same exchange, so a
  request seen by the controller and by the fleet is never counted twice in one row.
- A stale-epoch rejection is an exchange whose error (exchanges.error_code) is one of
  `STALE_ERRORS`. An id is "unregistered" when it sent requests a broker sends its controller
  (`BROKER_TO_CONTROLLER`) and neither a BrokerRegistration nor a BrokerHeartbeat of it was
  answered NONE: a registered broker heartbeats every couple of seconds, so such an id is a probe
  (a fleet's requests from ids it never registered) or a misconfigured client, never a broker of
  the cluster (an AlterPartition's top-level NONE proves nothing: its refusals may be per
  partition); an id that sent none of them (a ZooKeeper-era capture's) counts as registered. A
  registered broker "bounced" when it was seen with more than one broker epoch; a request
  is from a stale incarnation when its broker epoch is lower than the newest one seen for that
  broker at or before the request's time (registrations included).
- ISR changes are counted over the distinct granted states (partition epoch, ISR) of each
  partition, whoever saw them, in the order they were first seen: an exchange both sides
  captured, or a LeaderAndIsr sent to every replica, is one change.
- A controlled shutdown runs, per broker and broker epoch, from its first ControlledShutdown or
  WantShutDown heartbeat that was not rejected to the answer that said nothing remains; its
  duration is null if that answer never came.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode

from .transforms import PARTITION_COLUMNS, timestamp_of

PERCENTILE_ACCURACY = 10_000
#: the requests a broker sends its KRaft controller; of them, only a registered broker gets NONE for
#: those of `REGISTERED_ONLY`
REGISTERED_ONLY = (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT)
BROKER_TO_CONTROLLER = (
    ApiKey.BROKER_REGISTRATION,
    ApiKey.BROKER_HEARTBEAT,
    ApiKey.ALTER_PARTITION,
    ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.ALTER_REPLICA_STATE,
)
STALE_ERRORS = (
    ErrorCode.STALE_BROKER_EPOCH,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.STALE_CONTROLLER_EPOCH,
    ErrorCode.INVALID_UPDATE_VERSION,
)


def window_width_ns(window_seconds: float) -> int:
    """A window's width in whole nanoseconds (at least one)."""
    return max(1, round(window_seconds * 1_000_000_000))


def window_start_ns(window_seconds: float) -> Column:
    """The start of the `window_seconds` window holding each row's request time, in ns.

    Integer arithmetic only: a double holds today's epoch nanoseconds to 256 ns, so dividing them
    in floating point put a request in the last ~128 ns before a boundary into the next window.
    `pmod` is the floor remainder, so a window starts at or below its times for any sign."""
    width = F.lit(window_width_ns(window_seconds)).cast("long")
    time = F.col("request_time_ns").cast("long")
    return time - F.pmod(time, width)


def request_rates(exchanges: DataFrame, window_seconds: float) -> DataFrame:
    """Requests and requests/s per window, source, direction and API."""
    windowed = exchanges.withColumn("window_start_ns", window_start_ns(window_seconds))
    counts = windowed.groupBy("window_start_ns", "source", "direction", "api_name").agg(
        F.count(F.lit(1)).alias("requests")
    )
    return counts.select(
        timestamp_of("window_start_ns").alias("window_start"),
        "window_start_ns",
        "source",
        "direction",
        "api_name",
        "requests",
        (F.col("requests") / F.lit(float(window_seconds))).alias("requests_per_second"),
    )


def latency_percentiles(exchanges: DataFrame) -> DataFrame:
    """Latency p50/p95/p99 (and mean, max) in ms per source, direction, API and version."""
    answered = exchanges.filter(F.col("latency_ms").isNotNull())
    quantiles = F.percentile_approx("latency_ms", [0.5, 0.95, 0.99], PERCENTILE_ACCURACY)
    grouped = answered.groupBy("source", "direction", "api_name", "api_version").agg(
        F.count(F.lit(1)).alias("exchanges"),
        quantiles.alias("q"),
        F.mean("latency_ms").alias("mean_ms"),
        F.max("latency_ms").alias("max_ms"),
    )
    return grouped.select(
        "source",
        "direction",
        "api_name",
        "api_version",
        "exchanges",
        F.col("q")[0].alias("p50_ms"),
        F.col("q")[1].alias("p95_ms"),
        F.col("q")[2].alias("p99_ms"),
        "mean_ms",
        "max_ms",
    )


def error_counts(exchanges: DataFrame) -> DataFrame:
    """Answered exchanges per source, direction, API, version and error code (NONE included)."""
    answered = exchanges.filter(F.col("error_code").isNotNull())
    return answered.groupBy("source", "direction", "api_name", "api_version", "error_code", "error_name").agg(
        F.count(F.lit(1)).alias("exchanges")
    )


def with_newest_epoch(exchanges: DataFrame) -> DataFrame:
    """Exchanges with `newest_broker_epoch` (newest epoch of the broker seen so far) and `stale_incarnation`."""
    so_far = Window.partitionBy("broker_id").orderBy("request_time_ns").rowsBetween(Window.unboundedPreceding, 0)
    newest = F.when(F.col("broker_id").isNotNull(), F.max("broker_epoch").over(so_far))
    marked = exchanges.withColumn("newest_broker_epoch", newest)
    return marked.withColumn(
        "stale_incarnation", F.coalesce(F.col("broker_epoch") < F.col("newest_broker_epoch"), F.lit(False))
    )


def broker_epochs(exchanges: DataFrame) -> DataFrame:
    """Per broker: the broker epochs seen, whether it is unregistered or bounced (see the module
    rules), and its stale traffic."""
    known = with_newest_epoch(exchanges.filter(F.col("broker_id").isNotNull()))
    is_stale_error = F.col("error_code").isin(*(int(code) for code in STALE_ERRORS))
    to_controller = F.col("api_key").isin(*(int(key) for key in BROKER_TO_CONTROLLER))
    asked = F.max(to_controller.cast("int")) > 0
    proves = F.col("api_key").isin(*(int(key) for key in REGISTERED_ONLY)) & (F.col("error_code") == 0)
    accepted = F.max(proves.cast("int")) > 0
    unregistered = asked & ~accepted
    return known.groupBy("broker_id").agg(
        F.array_sort(F.collect_set("broker_epoch")).alias("epochs"),
        F.size(F.collect_set("broker_epoch")).alias("incarnations"),
        (~unregistered & (F.size(F.collect_set("broker_epoch")) > 1)).alias("bounced"),
        unregistered.alias("unregistered"),
        F.min("time").alias("first_seen"),
        F.max("time").alias("last_seen"),
        F.count(F.lit(1)).alias("exchanges"),
        F.sum(is_stale_error.cast("long")).alias("stale_rejections"),
        F.sum(F.col("stale_incarnation").cast("long")).alias("stale_incarnation_requests"),
        F.sum((F.col("stale_incarnation") & (F.col("error_code") == 0)).cast("long")).alias(
            "stale_incarnation_accepted"
        ),
    )


def stale_rejections(exchanges: DataFrame, partition_rows: DataFrame) -> DataFrame:
    """Every exchange rejected for a stale epoch, with its broker's state and the partitions refused."""
    stale_codes = [int(code) for code in STALE_ERRORS]
    marked = with_newest_epoch(exchanges)
    bounced = broker_epochs(exchanges).filter("bounced").select("broker_id", F.lit(True).alias("bounced_broker"))
    rejected = marked.filter(F.col("error_code").isin(*stale_codes))
    exchange_key = ["source", "connection_id", "request_time_ns", "correlation_id"]
    refused = (
        partition_rows.filter(F.col("error_code").isin(*stale_codes))
        .groupBy(*exchange_key)
        .agg(F.count(F.lit(1)).alias("partitions_rejected"))
    )
    rows = rejected.join(refused, exchange_key, "left").join(F.broadcast(bounced), "broker_id", "left")
    return rows.select(
        "time",
        "request_time_ns",
        "source",
        "direction",
        "api_name",
        "api_version",
        "correlation_id",
        "broker_id",
        "broker_epoch",
        "newest_broker_epoch",
        "error_code",
        "error_name",
        F.coalesce("partitions_rejected", F.lit(0)).alias("partitions_rejected"),
        F.coalesce("bounced_broker", F.lit(False)).alias("bounced_broker"),
        "stale_incarnation",
    )


def stale_rejections_per_window(rejections: DataFrame, window_seconds: float) -> DataFrame:
    """Stale-epoch rejections per window, broker and error."""
    windowed = rejections.withColumn("window_start_ns", window_start_ns(window_seconds))
    counts = windowed.groupBy("window_start_ns", "broker_id", "error_name").agg(F.count(F.lit(1)).alias("rejections"))
    return counts.select(timestamp_of("window_start_ns").alias("window_start"), "broker_id", "error_name", "rejections")


def isr_changes(partition_rows: DataFrame) -> DataFrame:
    """Each change of a partition's granted ISR: shrink, expand, or reassign (same size, other members)."""
    states = (
        partition_rows.filter(F.col("isr_after").isNotNull() & F.col("partition_epoch_granted").isNotNull())
        .groupBy("topic", "partition", "partition_epoch_granted", "isr_after")
        .agg(F.min("request_time_ns").alias("request_time_ns"))
    )
    order = Window.partitionBy("topic", "partition").orderBy("request_time_ns", "partition_epoch_granted")
    states = states.withColumn("isr_before", F.lag("isr_after").over(order))
    changed = states.filter(isr_change().isNotNull())
    return changed.select(
        timestamp_of("request_time_ns").alias("time"),
        "request_time_ns",
        "topic",
        "partition",
        F.col("partition_epoch_granted").alias("partition_epoch"),
        "isr_before",
        "isr_after",
        isr_change().alias("change"),
    )


def isr_change() -> Column:
    """How `isr_after` differs from `isr_before` as sets: "shrink", "expand" or "reassign" (same
    size, other members); null when either is null or they hold the same brokers."""
    before, after = F.col("isr_before"), F.col("isr_after")
    differs = before.isNotNull() & after.isNotNull() & (F.array_sort(before) != F.array_sort(after))
    smaller, larger = F.size(after) < F.size(before), F.size(after) > F.size(before)
    return F.when(differs, F.when(smaller, "shrink").when(larger, "expand").otherwise("reassign"))


def unstable_partitions(changes: DataFrame) -> DataFrame:
    """Per partition: its ISR changes by kind, the most unstable first."""
    counted = changes.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).alias("changes"),
        F.sum((F.col("change") == "shrink").cast("long")).alias("shrinks"),
        F.sum((F.col("change") == "expand").cast("long")).alias("expansions"),
        F.sum((F.col("change") == "reassign").cast("long")).alias("reassignments"),
        F.min("time").alias("first_change"),
        F.max("time").alias("last_change"),
    )
    return counted.orderBy(F.col("changes").desc(), "topic", "partition")


#: The most unstable partitions given a timeline (`partition_timelines`).
TIMELINE_PARTITIONS = 10
#: A partition timeline's columns: its rank, the partition row's (transforms.PARTITION_COLUMNS, less
#: the topic id and ISR size) and how the row changed the ISR.
TIMELINE_COLUMNS = [
    "rank",
    *(name for name in PARTITION_COLUMNS if name not in ("topic_id", "isr_size")),
    "isr_change",
]


def partition_timelines(partition_rows: DataFrame, unstable: DataFrame, count: int = TIMELINE_PARTITIONS) -> DataFrame:
    """Every partition row of the `count` most unstable partitions (`unstable_partitions`' order:
    the most ISR changes first, ties by topic and partition; `rank` 1 is the most unstable), in
    time order: who asked what (AlterPartition, AlterReplicaState, ...) and what the controller
    granted or sent (leader, epochs, ISR), with `isr_change` where the row's granted ISR differs
    from the one its source saw before (`isr_before`)."""
    order = [F.col("changes").desc(), F.col("topic"), F.col("partition")]
    top = unstable.orderBy(*order).limit(count)
    ranked = top.select("topic", "partition", F.row_number().over(Window.orderBy(*order)).alias("rank"))
    rows = partition_rows.join(F.broadcast(ranked), ["topic", "partition"])
    return rows.withColumn("isr_change", isr_change()).select(*TIMELINE_COLUMNS)


def controlled_shutdowns(exchanges: DataFrame) -> DataFrame:
    """Per source, broker and broker epoch: when its controlled shutdown started, ended, and how long it took."""
    steps = exchanges.filter(F.col("shutdown_state").isin("requested", "complete") & F.col("broker_id").isNotNull())
    done_at = F.when(F.col("shutdown_state") == "complete", F.coalesce("response_time_ns", "request_time_ns"))
    spans = steps.groupBy("source", "broker_id", "broker_epoch").agg(
        F.min("request_time_ns").alias("started_ns"),
        F.min(done_at).alias("completed_ns"),
        F.count(F.lit(1)).alias("requests"),
        F.array_sort(F.collect_set("api_name")).alias("apis"),
    )
    return spans.select(
        "source",
        "broker_id",
        "broker_epoch",
        timestamp_of("started_ns").alias("started"),
        timestamp_of("completed_ns").alias("completed"),
        ((F.col("completed_ns") - F.col("started_ns")) / 1e9).alias("duration_s"),
        "requests",
        "apis",
    )


def replica_state_events(partition_rows: DataFrame) -> DataFrame:
    """AlterReplicaState partitions: a replica reported OFFLINE or ONLINE, and whether it was accepted."""
    events = partition_rows.filter(F.col("api_name") == "AlterReplicaState")
    return events.select(
        "time",
        "source",
        "broker_id",
        "broker_epoch",
        "topic",
        "partition",
        "replica_state",
        "error_name",
        (F.col("error_code") == 0).alias("accepted"),
    )


#: The exchanges the report lists as the slowest.
SLOWEST = 20
#: The key of an exchange, shared by its rows in `exchanges` and `partition_results`.
EXCHANGE_KEY = ["source", "direction", "connection_id", "correlation_id", "request_time_ns"]


def slowest_exchanges(exchanges: DataFrame, partition_rows: DataFrame, count: int = SLOWEST) -> DataFrame:
    """The `count` answered exchanges with the highest latency (ties: the earliest first), each with
    the partitions it named (`topic-partition`, sorted) and how many."""
    slow = exchanges.filter(F.col("latency_ms").isNotNull()).orderBy(F.col("latency_ms").desc(), *EXCHANGE_KEY)
    slow = slow.limit(count)
    named = partition_rows.select(
        *EXCHANGE_KEY, F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("topic_partition")
    )
    parts = (
        named.join(F.broadcast(slow.select(*EXCHANGE_KEY)), EXCHANGE_KEY)
        .groupBy(*EXCHANGE_KEY)
        .agg(F.sort_array(F.collect_list("topic_partition")).alias("partitions"))
    )
    return (
        slow.join(parts, EXCHANGE_KEY, "left")
        .select(
            "time",
            "latency_ms",
            *EXCHANGE_KEY,
            "api_name",
            "api_version",
            "broker_id",
            "error_name",
            F.coalesce("partitions", F.array().cast("array<string>")).alias("partitions"),
        )
        .orderBy(F.col("latency_ms").desc(), *EXCHANGE_KEY)
    )
