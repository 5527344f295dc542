"""The job's tables, as pure functions DataFrame -> DataFrame over the decoded rows.

Purpose: `exchanges`, `partition_results`, `decode_errors` and `paired_exchanges` (aggregates.py
builds on them). No function here reads or writes anything, starts a session or collects to the
driver: each takes DataFrames and returns one, so tests call them on small frames and compare
with `assertDataFrameEqual`.

Rules:
- `time` columns are timestamps (microseconds, the session's time zone: the job sets UTC); the
  `*_ns` columns keep the capture's nanoseconds for exact ordering and joins.
- Control requests (LeaderAndIsr, StopReplica, UpdateMetadata) carry no broker id: their broker is the one whose
  accepted BrokerRegistration listed, as a listener, the request's peer ("host:port") when it was
  sent (outbound), or its server when it was received and the capture shows the server (a pcap,
  pcaps.py); the latest such registration wins; null when none did (e.g. the fleet's side of the
  exchange, which has no server).
- A topic is labelled by its name; frames that carry only an id (AlterPartition v2+,
  AlterReplicaState v1, LeaderAndIsr v5+ responses) get the name some frame paired with that id
  (CreateTopics responses, LeaderAndIsr v5+ requests), else the id itself.
- `isr_before` is the ISR last granted for the partition before the exchange (strictly earlier
  in time), as seen by the same source (so the fleet's copy of an exchange cannot be the
  controller's "before"); null if none was seen.
- Two rows are the two sides of one exchange (`paired_exchanges`) when one program captured it
  outbound and another inbound, with the same api key, version, correlation id and request bytes
  (digest and length); of several candidates the latest send before the receipt is taken.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from protocol.api_keys import ApiKey
from protocol.capture import INBOUND, OUTBOUND

from .schema import EXCHANGE_ROW, LISTENER_ROW, PARTITION_FIELDS, PARTITION_ROW, TOPIC_NAME_ROW

#: Sent by the controller to a broker (UpdateMetadata: a ZooKeeper-era controller's, as a pcap shows it).
CONTROL_API_KEYS = (int(ApiKey.LEADER_AND_ISR), int(ApiKey.STOP_REPLICA), int(ApiKey.UPDATE_METADATA))


def timestamp_of(nanoseconds: str) -> Column:
    """A nanosecond column as a timestamp (to the microsecond)."""
    return F.expr(f"timestamp_micros(div({nanoseconds}, 1000))")


def rows_of(decoded: DataFrame, kind: int) -> DataFrame:
    """The decoded rows of one kind (schema.py: `row_kind`)."""
    return decoded.filter(F.col("row_kind") == kind)


def broker_listeners(decoded: DataFrame) -> DataFrame:
    """(listener "host:port", broker_id) from accepted BrokerRegistrations, the latest per listener."""
    listed = rows_of(decoded, LISTENER_ROW).filter(
        (F.col("api_key") == int(ApiKey.BROKER_REGISTRATION)) & (F.col("error_code") == 0)
    )
    return listed.groupBy(F.col("listener").alias("listed")).agg(
        F.max_by("broker_id", "request_time_ns").alias("listener_broker_id")
    )


def topic_labels(decoded: DataFrame) -> DataFrame:
    """(topic_id, topic_name) for every topic id some frame paired with a name."""
    pairs = rows_of(decoded, TOPIC_NAME_ROW)
    return pairs.groupBy("topic_id").agg(F.min("topic").alias("topic_name"))


def resolved(decoded: DataFrame, kind: int) -> DataFrame:
    """Decoded rows of `kind` whose request decoded, with control requests' broker ids filled in."""
    listeners = broker_listeners(decoded)
    rows = rows_of(decoded, kind).filter(F.col("request_decoded"))
    # where the broker listens: the peer of a request sent to it, the server of one it received
    address = F.when(F.col("direction") == OUTBOUND, F.col("peer")).otherwise(F.col("server"))
    joined = rows.join(F.broadcast(listeners), address == listeners["listed"], "left")
    is_control = F.col("api_key").isin(*CONTROL_API_KEYS)
    broker = F.when(is_control, F.coalesce("broker_id", "listener_broker_id")).otherwise(F.col("broker_id"))
    return joined.withColumn("broker_id", broker).drop("listed", "listener_broker_id")


EXCHANGE_COLUMNS = [
    "time",
    "request_time_ns",
    "response_time_ns",
    "latency_ms",
    "source",
    "direction",
    "peer",
    "server",
    "connection_id",
    "api_key",
    "api_name",
    "api_version",
    "correlation_id",
    "broker_id",
    "broker_epoch",
    "error_code",
    "error_name",
    "shutdown_state",
    "request_bytes",
    "response_bytes",
    "request_digest",
]


def exchanges(decoded: DataFrame) -> DataFrame:
    """One row per exchange whose request decoded (columns: `EXCHANGE_COLUMNS`)."""
    latency = (F.col("response_time_ns") - F.col("request_time_ns")) / F.lit(1_000_000.0)
    return (
        resolved(decoded, EXCHANGE_ROW)
        .withColumn("time", timestamp_of("request_time_ns"))
        .withColumn("latency_ms", latency)
        .select(*EXCHANGE_COLUMNS)
    )


def decode_errors(decoded: DataFrame) -> DataFrame:
    """One row per frame that did not decode, with the reason (`request: ...` or `response: ...`)."""
    return (
        rows_of(decoded, EXCHANGE_ROW)
        .filter(F.col("decode_error").isNotNull())
        .select(
            timestamp_of("request_time_ns").alias("time"),
            "request_time_ns",
            "source",
            "direction",
            "peer",
            "connection_id",
            "api_key",
            "api_version",
            "correlation_id",
            "request_bytes",
            "response_bytes",
            F.col("decode_error").alias("reason"),
        )
    )


PARTITION_COLUMNS = [
    "time",
    "request_time_ns",
    "source",
    "direction",
    "connection_id",
    "api_name",
    "api_version",
    "correlation_id",
    "broker_id",
    "broker_epoch",
    "topic",
    "topic_id",
    "partition",
    "error_code",
    "error_name",
    "leader",
    "leader_epoch_asked",
    "leader_epoch_granted",
    "partition_epoch_asked",
    "partition_epoch_granted",
    "isr_requested",
    "isr_before",
    "isr_after",
    "isr_size",
    "replica_state",
]


def partition_results(decoded: DataFrame) -> DataFrame:
    """One row per partition of the exchanges that name partitions (columns: `PARTITION_COLUMNS`)."""
    context = ["request_time_ns", "source", "direction", "connection_id", "api_name", "api_version"]
    rows = resolved(decoded, PARTITION_ROW).select(
        *context, "correlation_id", "broker_id", "broker_epoch", *PARTITION_FIELDS
    )
    labels = topic_labels(decoded)
    rows = rows.join(F.broadcast(labels), "topic_id", "left")
    rows = rows.withColumn("topic", F.coalesce("topic", "topic_name", "topic_id")).drop("topic_name")
    rows = rows.withColumn("time", timestamp_of("request_time_ns"))
    rows = rows.withColumn("isr_size", F.size("isr_after")).withColumn(
        "isr_size", F.when(F.col("isr_after").isNotNull(), F.col("isr_size"))
    )
    return with_isr_before(rows).select(*PARTITION_COLUMNS)


def isr_states(partition_rows: DataFrame) -> DataFrame:
    """Each granted (partition epoch, ISR) of each partition, per source, with the time it was first seen."""
    granted = partition_rows.filter(F.col("isr_after").isNotNull() & F.col("partition_epoch_granted").isNotNull())
    return granted.groupBy("source", "topic", "partition", "partition_epoch_granted", "isr_after").agg(
        F.min("request_time_ns").alias("first_seen_ns")
    )


def with_isr_before(partition_rows: DataFrame) -> DataFrame:
    """`partition_rows` with `isr_before`: the ISR of the partition's latest state first seen earlier."""
    states = isr_states(partition_rows).select(
        "source",
        "topic",
        "partition",
        F.col("first_seen_ns").alias("request_time_ns"),
        F.col("isr_after").alias("state_isr"),
        F.lit(1).alias("is_state"),
    )
    rows = partition_rows.withColumn("is_state", F.lit(0))
    merged = rows.unionByName(states, allowMissingColumns=True)
    # A state first seen at a row's own time sorts after the row: only strictly earlier ones count.
    earlier = (
        Window.partitionBy("source", "topic", "partition")
        .orderBy("request_time_ns", "is_state")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    merged = merged.withColumn("isr_before", F.last("state_isr", ignorenulls=True).over(earlier))
    return merged.filter(F.col("is_state") == 0).drop("is_state", "state_isr")


def paired_exchanges(exchange_rows: DataFrame) -> DataFrame:
    """The exchanges captured by both sides: the sender's and the receiver's view, and the gap."""
    key = ["api_key", "api_version", "correlation_id", "request_digest", "request_bytes"]
    side = ["source", "request_time_ns", "response_time_ns", "latency_ms"]
    sent = exchange_rows.filter(F.col("direction") == OUTBOUND).select(
        *key, "api_name", "broker_id", *(F.col(name).alias(f"sender_{name}") for name in side)
    )
    received = exchange_rows.filter(F.col("direction") == INBOUND).select(
        *key, F.col("broker_id").alias("receiver_broker_id"), *(F.col(name).alias(f"receiver_{name}") for name in side)
    )
    pairs = sent.join(received, key).filter(
        (F.col("sender_source") != F.col("receiver_source"))
        & (F.col("sender_request_time_ns") <= F.col("receiver_request_time_ns"))
    )
    latest_send = Window.partitionBy("receiver_source", "receiver_request_time_ns", *key).orderBy(
        F.col("sender_request_time_ns").desc()
    )
    pairs = pairs.withColumn("rank", F.row_number().over(latest_send)).filter(F.col("rank") == 1)
    return pairs.select(
        timestamp_of("sender_request_time_ns").alias("time"),
        "api_name",
        "api_version",
        "correlation_id",
        F.coalesce("broker_id", "receiver_broker_id").alias("broker_id"),
        "sender_source",
        "receiver_source",
        ((F.col("receiver_request_time_ns") - F.col("sender_request_time_ns")) / 1e6).alias("request_transit_ms"),
        "sender_latency_ms",
        "receiver_latency_ms",
        (F.col("sender_latency_ms") - F.col("receiver_latency_ms")).alias("between_ms"),
    )
