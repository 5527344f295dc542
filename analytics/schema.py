"""Schemas of the job: the capture as Spark reads it, and the decoded rows the executors produce.

Purpose: every DataFrame the job reads or builds from Python has an explicit schema here; nothing
is inferred. The capture schema is written out for Spark and checked against the format's own
`protocol.capture.capture_schema()` by a test, so the two cannot drift apart.

Rules:
- `source` (which program captured a row) comes from the part file's name, whose form is
  `<prefix>-<19-digit start ns>-<sequence>.parquet` (protocol.capture.part_name): the daemon's
  prefix "capture" means "controller"; any other prefix is its own source name (the fleet
  writes "fleet"). Files whose names do not follow the form are not parts and are not read.
- Decoded rows keep the capture's envelope as it was (Arrow columns passed through untouched)
  and add what the frames say; a value the frames do not carry is null, never a sentinel.
- Decoded rows are flat: a `row_kind` column says what a row is (an exchange, a partition, a
  topic name, a listener), and no column is a list of structs.
- Error codes are int32 in the decoded rows (Kafka's are int16, fencer's own 1000 fits either).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

#: The capture rows as Spark reads them (nullability as written; Spark relaxes it on file scans).
CAPTURE = StructType(
    [
        StructField("request_time_ns", LongType(), nullable=False),
        StructField("response_time_ns", LongType(), nullable=True),
        StructField("direction", StringType(), nullable=False),
        StructField("connection_id", LongType(), nullable=False),
        StructField("peer", StringType(), nullable=False),
        StructField("api_key", ShortType(), nullable=False),
        StructField("api_version", ShortType(), nullable=False),
        StructField("correlation_id", IntegerType(), nullable=False),
        StructField("request", BinaryType(), nullable=False),
        StructField("response", BinaryType(), nullable=True),
    ]
)

#: Part file prefix -> source name, for the prefixes whose source is not the prefix itself.
SOURCE_BY_PREFIX = {"capture": "controller"}
#: The part file name's form; group 1 is the prefix.
PART_NAME_PATTERN = r"^(.+)-[0-9]{19}-[0-9]+\.parquet$"
UNKNOWN_SOURCE = "unknown"

#: The columns of a capture row that the decoder reads, besides the frames; all are passed through.
ENVELOPE = [
    "request_time_ns",
    "response_time_ns",
    "direction",
    "source",
    "connection_id",
    "peer",
    "api_key",
    "api_version",
    "correlation_id",
    "request_digest",
    "server",
]

#: The kinds of decoded rows (`row_kind`): the decoder hands Spark flat rows only (no nested
#: lists, which cost the JVM more to take in and to write than the decoding itself), one row per
#: exchange and one per thing an exchange names, each kind using its own subset of the columns.
EXCHANGE_ROW = 0  # one per capture row: what the frames say of the exchange
PARTITION_ROW = 1  # one per partition an exchange names (facts.py: partition rows)
TOPIC_NAME_ROW = 2  # one per (topic id, name) pair a frame names together
LISTENER_ROW = 3  # one per listener ("host:port") a BrokerRegistration lists

#: A partition row's own columns (after its exchange's envelope and facts), its error the partition's.
PARTITION_FIELDS = [
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
    "isr_after",
    "replica_state",
]

#: What the frames say, column by column, after the passed-through envelope. Every row carries
#: its exchange's envelope; the other columns are null where a kind has no use for them:
#: - exchange rows: `request_bytes` .. `decode_error`;
#: - partition rows: `request_decoded` (true), `api_name`, `broker_id`, `broker_epoch` of their
#:   exchange, `error_code` / `error_name` of the partition (its own code in the response, facts.py),
#:   and `topic` .. `replica_state`;
#: - topic name rows: `topic_id` and `topic` (the name);
#: - listener rows: `broker_id` and `error_code` of their BrokerRegistration, and `listener`.
DECODED_FIELDS = [
    pa.field("row_kind", pa.int8()),
    pa.field("request_bytes", pa.int32()),
    pa.field("response_bytes", pa.int32()),
    pa.field("request_decoded", pa.bool_()),
    pa.field("api_name", pa.string()),
    pa.field("broker_id", pa.int32()),
    pa.field("broker_epoch", pa.int64()),
    pa.field("error_code", pa.int32()),
    pa.field("error_name", pa.string()),
    pa.field("shutdown_state", pa.string()),
    pa.field("decode_error", pa.string()),
    pa.field("topic", pa.string()),  # the name, when the frame carries one
    pa.field("topic_id", pa.string()),  # the id, when the frame carries one
    pa.field("partition", pa.int32()),
    pa.field("leader", pa.int32()),
    pa.field("leader_epoch_asked", pa.int32()),
    pa.field("leader_epoch_granted", pa.int32()),
    pa.field("partition_epoch_asked", pa.int32()),
    pa.field("partition_epoch_granted", pa.int32()),
    pa.field("isr_requested", pa.list_(pa.int32())),
    pa.field("isr_after", pa.list_(pa.int32())),
    pa.field("replica_state", pa.string()),
    pa.field("listener", pa.string()),
]

#: The envelope columns as the decoder receives them from Spark (Spark's short is Arrow's int16).
ENVELOPE_ARROW = pa.schema(
    [
        pa.field("request_time_ns", pa.int64()),
        pa.field("response_time_ns", pa.int64()),
        pa.field("direction", pa.string()),
        pa.field("source", pa.string()),
        pa.field("connection_id", pa.int64()),
        pa.field("peer", pa.string()),
        pa.field("api_key", pa.int16()),
        pa.field("api_version", pa.int16()),
        pa.field("correlation_id", pa.int32()),
        pa.field("request_digest", pa.int64()),
        pa.field("server", pa.string()),  # the server's "host:port" where a pcap shows it (pcaps.py); else null
    ]
)

DECODED_ARROW = pa.schema([*ENVELOPE_ARROW, *DECODED_FIELDS])


def decoded_spark_schema() -> StructType:
    """`DECODED_ARROW` as Spark's schema (what `mapInArrow` is told the decoder yields)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(DECODED_ARROW)
