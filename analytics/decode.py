"""Capture rows -> decoded rows, with `protocol`, one Arrow record batch at a time, in the executors.

Purpose: the job's only Python code on the data path is a `mapInArrow` over the capture rows
(plus `source` and `request_digest`, added by Spark) that runs `decode_batch` on each Arrow
batch. Each batch's envelope columns are passed through as Arrow arrays, untouched; only the
frames are read in Python, one exchange at a time (the codec decodes frames, not columns), and
the new columns are built as Arrow arrays once per batch. `decode_batch` is also what the
single-process baseline (benchmarks/analytics.py) and the tests call.

`stage_decoded(captures, directory)` is what the job runs (pipeline.py): each task writes its
decoded batches itself, with pyarrow, as one Parquet file under `directory`, and hands Spark
back only its row count. The decoded rows never cross back into the JVM: converting the
nested Arrow output into Spark rows and shredding them again with Spark's row-at-a-time Parquet
writer cost more CPU than the decoding itself on this machine (benchmarks/analytics.py), while
pyarrow writes the Arrow columns as they are. `decode_captures` (the decoded rows as a
DataFrame) is the same decode for tests and interactive use.

Rules:
- One decoded row per capture row, always. Nothing a frame holds can fail the job: a request
  that does not decode (truncated, garbage, an unknown api key or version, a header that
  contradicts the envelope) gives a row with `request_decoded` false and `decode_error` saying
  why, prefixed "request: "; a response that does not decode keeps the request's facts, with no
  error code and `decode_error` prefixed "response: ". Any exception, not only `DecodeError`, is
  caught per row: the codec promises `DecodeError`, and the job must survive a broken promise.
- Staged files: `part-<task's partition>.parquet`, written under a hidden temporary name
  (`.part-...-<attempt>.tmp`, which Spark's reader skips) and renamed into place when the task's
  input is exhausted, so a retried or speculative attempt replaces its partition's file with the
  same rows (the decode is deterministic) and a failed attempt leaves nothing Spark reads. Like
  the capture dirs (read.py) and the output (output.py), the directory must be the same path on
  every node: local on `local[*]`, a shared mount on a cluster. Every task writes its file, even
  with no rows, so the directory always holds the decoded schema.
- `error_code` is `protocol.error_codes.response_error_code` (the daemon's metrics use the same
  rule): the response's own non-zero code, else the first non-zero nested one, else 0; null
  without a response.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame

from protocol.error_codes import error_name, response_error_code
from protocol.registry import api, decode_request, decode_response

from .facts import NO_FACTS, Facts, facts
from .schema import DECODED_ARROW, DECODED_FIELDS, ENVELOPE, decoded_spark_schema


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


def decode_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Decode one batch of capture rows (the columns of `schema.ENVELOPE` plus `request`, `response`)."""
    keys = batch.column("api_key").to_pylist()
    versions = batch.column("api_version").to_pylist()
    correlations = batch.column("correlation_id").to_pylist()
    requests = batch.column("request").to_pylist()
    responses = batch.column("response").to_pylist()
    rows = [
        decode_exchange(*exchange) for exchange in zip(keys, versions, correlations, requests, responses, strict=True)
    ]
    return pa.RecordBatch.from_arrays(
        [batch.column(name) for name in ENVELOPE] + _decoded_columns(requests, responses, rows),
        schema=DECODED_ARROW,
    )


def _decoded_columns(requests: list[bytes], responses: list[bytes | None], rows: list[Decoded]) -> list[pa.Array]:
    values: dict[str, list[Any]] = {
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
        "partitions": [row.facts.partitions for row in rows],
        "topic_names": [row.facts.topic_names for row in rows],
        "listeners": [row.facts.listeners for row in rows],
    }
    return [pa.array(values[field.name], type=field.type) for field in DECODED_FIELDS]


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`decode_batch` over a partition's batches (what `mapInArrow` runs in each Python worker)."""
    for batch in batches:
        yield decode_batch(batch)


def decode_captures(captures: DataFrame) -> DataFrame:
    """Decoded rows (schema.DECODED_ARROW) of capture rows that carry `source` and `request_digest`."""
    columns = [*ENVELOPE, "request", "response"]
    return captures.select(*columns).mapInArrow(decode_batches, decoded_spark_schema())


#: Rows per row group of a staged file: large enough that reading it back costs little per group.
STAGED_ROW_GROUP_ROWS = 100_000


def stage_decoded(captures: DataFrame, directory: Path) -> int:
    """Decode capture rows (with `source` and `request_digest`) into Parquet files under `directory`; rows decoded."""
    directory.mkdir(parents=True, exist_ok=True)
    columns = [*ENVELOPE, "request", "response"]
    counts = captures.select(*columns).mapInArrow(
        functools.partial(write_decoded, str(directory)), "partition int, rows long"
    )
    return sum(row["rows"] for row in counts.collect())


def write_decoded(directory: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One task of `stage_decoded`: decode its batches into `<directory>/part-<partition>.parquet`."""
    context = TaskContext.get()
    partition, attempt = (context.partitionId(), context.attemptNumber()) if context else (0, 0)
    final = os.path.join(directory, f"part-{partition:05d}.parquet")
    temporary = os.path.join(directory, f".part-{partition:05d}-{attempt}.tmp")
    rows, pending, pending_rows = 0, [], 0
    try:
        with pq.ParquetWriter(temporary, DECODED_ARROW, compression="snappy") as writer:
            for batch in batches:
                decoded = decode_batch(batch)
                pending.append(decoded)
                pending_rows += decoded.num_rows
                if pending_rows >= STAGED_ROW_GROUP_ROWS:
                    writer.write_table(pa.Table.from_batches(pending), row_group_size=pending_rows)
                    rows, pending, pending_rows = rows + pending_rows, [], 0
            if pending_rows:
                writer.write_table(pa.Table.from_batches(pending), row_group_size=pending_rows)
                rows += pending_rows
        os.replace(temporary, final)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    yield pa.RecordBatch.from_arrays(
        [pa.array([partition], pa.int32()), pa.array([rows], pa.int64())], names=["partition", "rows"]
    )
