"""Decoding capture rows (analytics.decode, analytics.facts) and the schemas they follow (analytics.schema).

Most of these run without Spark: `decode_batch` is the function each executor runs per Arrow batch.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.testing import assertDataFrameEqual

from analytics import schema
from analytics.decode import decode_batch, decode_exchange
from analytics.read import CaptureError, check_capture_dirs, read_captures
from protocol.capture import CAPTURE_SCHEMA, Exchange, to_table
from protocol.messages.alter_replica_state import ONLINE

from . import scenario
from .captures import raw_exchange, write_capture


def batch_of(rows: list[Exchange], source: str = "controller") -> pa.RecordBatch:
    """Capture rows as the decoder receives them from Spark (with `source` and `request_digest`)."""
    table = to_table(rows)
    table = table.append_column("source", pa.array([source] * len(rows))).append_column(
        "request_digest", pa.array(range(len(rows)), pa.int64())
    )
    return table.select([*schema.ENVELOPE, "request", "response"]).combine_chunks().to_batches()[0]


def test_the_spark_capture_schema_is_the_capture_format() -> None:
    assert from_arrow_schema(CAPTURE_SCHEMA) == schema.CAPTURE


def test_a_batch_decodes_into_one_row_per_capture_row_with_the_envelope_untouched() -> None:
    rows = scenario.controller_rows()
    batch = batch_of(rows)
    decoded = decode_batch(batch)
    assert decoded.schema == schema.DECODED_ARROW
    assert decoded.num_rows == len(rows)
    for name in schema.ENVELOPE:
        assert decoded.column(name).equals(batch.column(name)), name
    assert decoded.column("request_decoded").to_pylist() == [True] * len(rows)
    assert decoded.column("decode_error").null_count == len(rows)


def test_the_facts_of_each_api() -> None:
    rows = {row.correlation_id: row for row in scenario.controller_rows()}
    decoded = {row["correlation_id"]: row for row in decode_batch(batch_of(list(rows.values()))).to_pylist()}
    by_api = {}
    for correlation_id, row in decoded.items():
        by_api.setdefault(row["api_name"], []).append(row)
        assert row["api_name"] is not None and rows[correlation_id].api_key == row["api_key"]
    registration = by_api["BrokerRegistration"][0]
    assert (registration["broker_id"], registration["broker_epoch"]) == (1, 10)
    assert registration["listeners"] == ["127.0.0.1:9101"]
    assert by_api["CreateTopics"][0]["topic_names"] == [{"topic_id": str(scenario.ORDERS_ID), "name": "orders"}]
    leader_and_isr = by_api["LeaderAndIsr"][0]
    assert leader_and_isr["broker_id"] is None and leader_and_isr["broker_epoch"] == 10
    assert leader_and_isr["topic_names"] == [{"topic_id": str(scenario.ORDERS_ID), "name": "orders"}]
    assert [row["shutdown_state"] for row in by_api["ControlledShutdown"]] == ["requested", "complete"]
    assert [row["shutdown_state"] for row in by_api["BrokerHeartbeat"]] == [None, None, None, "requested", "complete"]
    replica_states = [row["partitions"][0]["replica_state"] for row in by_api["AlterReplicaState"]]
    assert replica_states == ["OFFLINE", "ONLINE"]


def test_a_rejected_shutdown_and_an_unknown_replica_state() -> None:
    stale = scenario.heartbeat(1, 9, 0, error=77, want=True)
    unknown = scenario.alter_replica_state(ONLINE + 5, 1)
    decoded = decode_batch(batch_of([stale, unknown])).to_pylist()
    assert decoded[0]["shutdown_state"] == "rejected"
    assert decoded[1]["partitions"][0]["replica_state"] == "UNKNOWN(7)"


def test_an_exchange_without_a_response_has_no_error_and_no_granted_state() -> None:
    row = scenario.alter_partition((1, 2), 0, 0, granted=1)._replace(response=None, response_time_ns=None)
    decoded = decode_batch(batch_of([row])).to_pylist()[0]
    assert (decoded["error_code"], decoded["error_name"], decoded["response_bytes"]) == (None, None, None)
    partition = decoded["partitions"][0]
    assert partition["error_code"] is None and partition["isr_after"] is None and partition["isr_requested"] == [1, 2]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        *zip(scenario.corrupt_rows(), scenario.CORRUPT_REASONS, strict=True),
        (
            raw_exchange(
                scenario.heartbeat(1, 10, 0, correlation_id=5).request,
                None,
                api_key=63,
                api_version=1,
                correlation_id=6,
                at_ms=0,
            ),
            "request: header says api key 63 version 1 correlation id 5, the envelope 63 1 6",
        ),
        (
            raw_exchange(b"\xff" * 40, None, api_key=-1, api_version=-1, correlation_id=-1, at_ms=0),
            "request: UnknownApiError: unknown api key -1 (version -1)",
        ),
    ],
)
def test_frames_that_do_not_decode_give_a_reason_never_an_exception(row: Exchange, reason: str) -> None:
    decoded = decode_exchange(row.api_key, row.api_version, row.correlation_id, row.request, row.response)
    assert decoded.decode_error is not None and decoded.decode_error.startswith(reason), decoded.decode_error
    assert decoded.request_decoded == reason.startswith("response: ")


def test_a_response_for_another_correlation_id_is_a_response_error() -> None:
    row = scenario.heartbeat(1, 10, 0)
    other = scenario.heartbeat(1, 10, 0)
    decoded = decode_exchange(row.api_key, row.api_version, row.correlation_id, row.request, other.response)
    assert decoded.decode_error == (
        f"response: correlation id {other.correlation_id}, the request's {row.correlation_id}"
    )
    assert decoded.request_decoded and decoded.error_code is None and decoded.facts.broker_id == 1


def test_source_comes_from_the_part_file_prefix(spark: SparkSession, tmp_path: Path) -> None:
    write_capture(tmp_path / "a", [scenario.heartbeat(1, 10, 0)])
    write_capture(tmp_path / "a", [scenario.heartbeat(1, 10, 1)], prefix="fleet", sequence=1)
    write_capture(tmp_path / "a", [scenario.heartbeat(1, 10, 2)], prefix="replayer", sequence=2)
    (tmp_path / "a" / ".capture-0000000000000000001-000009.parquet.tmp").write_bytes(b"half a part")
    rows = read_captures(spark, check_capture_dirs([tmp_path / "a"]))
    assertDataFrameEqual(rows.select("source"), [("controller",), ("fleet",), ("replayer",)])


def test_the_time_range_keeps_requests_from_the_start_up_to_the_end_exclusive(
    spark: SparkSession, tmp_path: Path
) -> None:
    rows = [scenario.heartbeat(1, 10, at) for at in (0, 1, 2, 3)]
    write_capture(tmp_path, rows)
    kept = read_captures(spark, [tmp_path], rows[1].request_time_ns, rows[3].request_time_ns)
    assertDataFrameEqual(kept.select("request_time_ns"), [(rows[1].request_time_ns,), (rows[2].request_time_ns,)])


def test_capture_dirs_that_cannot_be_used_are_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.parquet").write_bytes(b"")
    (tmp_path / "file").write_text("x")
    for name, message in [
        ("missing", "not a directory"),
        ("file", "not a directory"),
        ("empty", "no capture parts"),
        ("other", "no capture parts"),
    ]:
        with pytest.raises(CaptureError, match=message):
            check_capture_dirs([tmp_path / name])
