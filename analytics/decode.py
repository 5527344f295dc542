"""Capture rows -> decoded rows, with `protocol`, one Arrow record batch at a time, in the executors.

Purpose: the job's Python code on the data path runs `decode_batch` on each Arrow batch of
capture rows, in the executors that read the capture parts themselves (read.py), so that the JVM
never carries a frame, and over a pcap's exchanges (`decode_captures`). Only the frames are read
in Python, one exchange at a time (the codec decodes frames, not columns); the new columns are
built as Arrow arrays once per batch, and each row's envelope is taken from the batch's own Arrow
arrays (`take`), never rebuilt in Python. `decode_batch` is also what the single-process
baselines (benchmarks/same_work, benchmarks/analytics.py) and the tests call.

The decoded rows are flat (schema.py: `row_kind`): an exchange row per capture row, then a row
per partition, topic name and listener the exchanges name, each kind in batches of its own.
The JVM takes flat columns in cheaply and Spark's own Parquet writer writes them through its
output committer (pipeline.py); the nested rows of the first design (lists of partition structs)
cost the JVM more to convert and to write than the decoding itself.

Rules:
- One exchange row per capture row, always. Nothing a frame holds can fail the job: a request
  that does not decode (truncated, garbage, an unknown api key or version, a header that
  contradicts the envelope) gives a row with `request_decoded` false and `decode_error` saying
  why, prefixed "request: "; a response that does not decode keeps the request's facts, with no
  error code and `decode_error` prefixed "response: ". Any exception, not only `DecodeError`, is
  caught per row: the codec promises `DecodeError`, and the job must survive a broken promise.
- The decode is deterministic and writes nothing: a task Spark retries yields the same rows, and
  only Spark's committer puts files in the output.
- `request_digest` is XXH64 of the request frame with Spark's seed (42), as a signed long:
  Spark's own `xxhash64` of the frame, so a row digested here joins one Spark digested.
- `error_code` is `protocol.error_codes.response_error_code` (the daemon's metrics use the same
  rule): the response's own non-zero code, else the first non-zero nested one, else 0; null
  without a response.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pyarrow as pa
from pyspark.sql import DataFrame
from xxhash import xxh64_intdigest

from protocol.error_codes import error_name, response_error_code
from protocol.registry import api, decode_request, decode_response

from .facts import NO_FACTS, Facts, facts
from .schema import (
    DECODED_ARROW,
    DECODED_FIELDS,
    ENVELOPE,
    ENVELOPE_ARROW,
    EXCHANGE_ROW,
    LISTENER_ROW,
    PARTITION_FIELDS,
    PARTITION_ROW,
    TOPIC_NAME_ROW,
    decoded_spark_schema,
)


class Decoded(NamedTuple):
    """The decoded columns of one row, in the order of `schema.DECODED_FIELDS` after the sizes."""

    request_decoded: bool
    api_name: str | None
    error_code: int | None
    decode_error: str | None
    facts: Facts


def decode_exchange(
    api_key: int, api_version: int, correlation_id: int, request: bytes, response: bytes | None
) -> Decoded:
    """Decode one exchange's frames; never raises (failures are described in `decode_error`)."""
    try:
        decoded = decode_request(request)
        header = decoded.header
        if (header.request_api_key, header.request_api_version, header.correlation_id) != (
            api_key,
            api_version,
            correlation_id,
        ):
            reason = (
                f"request: header says api key {header.request_api_key} version {header.request_api_version} "
                f"correlation id {header.correlation_id}, the envelope {api_key} {api_version} {correlation_id}"
            )
            return Decoded(False, None, None, reason, NO_FACTS)
    except Exception as error:
        return Decoded(False, None, None, f"request: {_describe(error)}", NO_FACTS)
    name = api(api_key).name
    body, failure = _decode_response(response, api_key, api_version, correlation_id)
    try:
        return Decoded(
            True, name, None if body is None else response_error_code(body), failure, facts(api_key, decoded.body, body)
        )
    except Exception as error:
        return Decoded(True, name, None, f"facts: {_describe(error)}", NO_FACTS)


def _decode_response(
    response: bytes | None, api_key: int, api_version: int, correlation_id: int
) -> tuple[Any | None, str | None]:
    """(response body, None), (None, None) without a response, or (None, reason)."""
    if response is None:
        return None, None
    try:
        header, body = decode_response(response, api_key, api_version)
    except Exception as error:
        return None, f"response: {_describe(error)}"
    if header.correlation_id != correlation_id:
        return None, f"response: correlation id {header.correlation_id}, the request's {correlation_id}"
    return body, None


def _describe(error: Exception) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def decode_batch(batch: pa.RecordBatch) -> pa.Table:
    """Decode one batch of capture rows (the columns of `schema.ENVELOPE` plus `request`, `response`):
    its exchange rows, then its partition, topic name and listener rows (`schema.DECODED_ARROW`)."""
    keys = batch.column("api_key").to_pylist()
    versions = batch.column("api_version").to_pylist()
    correlations = batch.column("correlation_id").to_pylist()
    requests = batch.column("request").to_pylist()
    responses = batch.column("response").to_pylist()
    rows = [
        decode_exchange(*exchange) for exchange in zip(keys, versions, correlations, requests, responses, strict=True)
    ]
    envelope = [batch.column(name) for name in ENVELOPE]
    batches = [_exchange_rows(envelope, requests, responses, rows)]
    batches += [named for named in _named_rows(envelope, rows) if named.num_rows]
    return pa.Table.from_batches(batches, schema=DECODED_ARROW)


def _kind_batch(envelope: list[pa.Array], kind: int, length: int, columns: dict[str, list[Any]]) -> pa.RecordBatch:
    """A batch of one kind: the envelope arrays given, `columns` by name, every other column null."""
    arrays = list(envelope)
    for field in DECODED_FIELDS:
        if field.name == "row_kind":
            arrays.append(pa.array([kind] * length, pa.int8()))
        elif field.name in columns:
            arrays.append(pa.array(columns[field.name], type=field.type))
        else:
            arrays.append(pa.nulls(length, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_ARROW)


def _exchange_rows(
    envelope: list[pa.Array], requests: list[bytes], responses: list[bytes | None], rows: list[Decoded]
) -> pa.RecordBatch:
    columns: dict[str, list[Any]] = {
        "request_bytes": [len(request) for request in requests],
        "response_bytes": [None if response is None else len(response) for response in responses],
        "request_decoded": [row.request_decoded for row in rows],
        "api_name": [row.api_name for row in rows],
        "broker_id": [row.facts.broker_id for row in rows],
        "broker_epoch": [row.facts.broker_epoch for row in rows],
        "error_code": [row.error_code for row in rows],
        "error_name": [None if row.error_code is None else error_name(row.error_code) for row in rows],
        "shutdown_state": [row.facts.shutdown_state for row in rows],
        "decode_error": [row.decode_error for row in rows],
    }
    return _kind_batch(envelope, EXCHANGE_ROW, len(rows), columns)


def _named_rows(envelope: list[pa.Array], rows: list[Decoded]) -> Iterator[pa.RecordBatch]:
    """The partition, topic name and listener rows of a batch's exchanges, a batch per kind, each
    row with its exchange's envelope."""
    partition_of: list[int] = []
    partitions: list[tuple[Any, ...]] = []
    name_of: list[int] = []
    names: list[tuple[str, str]] = []
    listener_of: list[int] = []
    listeners: list[str] = []
    for index, row in enumerate(rows):
        found = row.facts
        if found.partitions:
            partition_of += [index] * len(found.partitions)
            partitions += found.partitions
        if found.topic_names:
            name_of += [index] * len(found.topic_names)
            names += found.topic_names
        if found.listeners:
            listener_of += [index] * len(found.listeners)
            listeners += found.listeners
    if partitions:
        exchange = [rows[i] for i in partition_of]
        by_column = list(zip(*partitions, strict=True))
        columns: dict[str, list[Any]] = dict(zip(PARTITION_FIELDS, map(list, by_column), strict=True))
        columns["request_decoded"] = [True] * len(partitions)
        columns["api_name"] = [row.api_name for row in exchange]
        columns["broker_id"] = [row.facts.broker_id for row in exchange]
        columns["broker_epoch"] = [row.facts.broker_epoch for row in exchange]
        yield _kind_batch(_taken(envelope, partition_of), PARTITION_ROW, len(partitions), columns)
    if names:
        topic_ids, topic_names = zip(*names, strict=True)
        columns = {"topic_id": list(topic_ids), "topic": list(topic_names)}
        yield _kind_batch(_taken(envelope, name_of), TOPIC_NAME_ROW, len(names), columns)
    if listeners:
        exchange = [rows[i] for i in listener_of]
        columns = {
            "listener": listeners,
            "broker_id": [row.facts.broker_id for row in exchange],
            "error_code": [row.error_code for row in exchange],
            "api_name": [row.api_name for row in exchange],
        }
        yield _kind_batch(_taken(envelope, listener_of), LISTENER_ROW, len(listeners), columns)


def _taken(envelope: list[pa.Array], indices: list[int]) -> list[pa.Array]:
    chosen = pa.array(indices, pa.int32())
    return [column.take(chosen) for column in envelope]


#: Spark's seed for `xxhash64` (its `XxHash64` expression's default).
DIGEST_SEED = 42
_SIGN = 1 << 63


def request_digests(requests: list[bytes]) -> pa.Array:
    """Spark's `xxhash64(request)` of each request frame: XXH64 with Spark's seed, as a signed long."""
    return pa.array(
        [(digest ^ _SIGN) - _SIGN for digest in (xxh64_intdigest(request, DIGEST_SEED) for request in requests)],
        pa.int64(),
    )


#: What `digested` yields and `decode_batch` takes: the envelope, then the frames.
CAPTURE_ARROW = pa.schema([*ENVELOPE_ARROW, pa.field("request", pa.binary()), pa.field("response", pa.binary())])


def digested(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Capture rows with `source` and `server` -> `CAPTURE_ARROW`, `request_digest` added (the
    columns cast to the envelope's types, as Spark's reader casts a part's to the job's schema)."""
    added = {"request_digest": request_digests(batch.column("request").to_pylist())}
    columns = [
        added[field.name] if field.name in added else batch.column(field.name).cast(field.type)
        for field in CAPTURE_ARROW
    ]
    return pa.RecordBatch.from_arrays(columns, schema=CAPTURE_ARROW)


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`decode_batch` over a partition's capture rows, digested (what `mapInArrow` runs in each Python worker)."""
    for batch in batches:
        if batch.num_rows:
            yield from decode_batch(digested(batch)).to_batches()


def decode_captures(captures: DataFrame) -> DataFrame:
    """Decoded rows (schema.DECODED_ARROW) of capture rows in Spark that carry `source` and
    `server` (a pcap's exchanges, pcaps.py; the capture parts are read and decoded by read.py)."""
    columns = [name for name in CAPTURE_ARROW.names if name != "request_digest"]
    return captures.select(*columns).mapInArrow(decode_batches, decoded_spark_schema())
