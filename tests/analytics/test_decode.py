"""Decoding capture rows (analytics.decode, analytics.facts) and the schemas they follow (analytics.schema).

Most of these run without Spark: `decode_batch` is the function each executor runs per Arrow batch.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.testing import assertDataFrameEqual

from analytics import schema
from analytics.decode import decode_batch, decode_exchange, request_digests
from analytics.facts import PartitionRow
from analytics.read import TASK_BYTES, CaptureError, balanced, check_capture_dirs, read_captures, task_frame
from protocol.capture import OUTBOUND, Exchange, capture_schema, to_table
from protocol.messages.alter_replica_state import ONLINE
from protocol.messages.update_metadata import (
    UpdateMetadataRequest,
    UpdateMetadataRequestPartitionState,
    UpdateMetadataRequestTopicState,
    UpdateMetadataResponse,
)

from . import scenario
from .captures import exchange, raw_exchange, write_capture


def batch_of(rows: list[Exchange], source: str = "controller") -> pa.RecordBatch:
    """Capture rows as the decoder receives them from Spark (with `source` and `request_digest`)."""
    table = to_table(rows)
    table = (
        table.append_column("source", pa.array([source] * len(rows)))
        .append_column("request_digest", pa.array(range(len(rows)), pa.int64()))
        .append_column("server", pa.nulls(len(rows), pa.string()))
    )
    return table.select([*schema.ENVELOPE, "request", "response"]).combine_chunks().to_batches()[0]


def test_the_spark_capture_schema_is_the_capture_format() -> None:
    assert from_arrow_schema(capture_schema()) == schema.CAPTURE


def test_the_partition_columns_are_decoded_columns_in_the_facts_order() -> None:
    names = [field.name for field in schema.DECODED_FIELDS]
    assert set(schema.PARTITION_FIELDS) <= set(names)
    assert len(schema.PARTITION_FIELDS) == len(PartitionRow.__args__)  # type: ignore[attr-defined]


def of_kind(decoded: pa.Table, kind: int) -> list[dict[str, object]]:
    return [row for row in decoded.to_pylist() if row["row_kind"] == kind]


def test_a_batch_decodes_into_one_exchange_row_per_capture_row_with_the_envelope_untouched() -> None:
    rows = scenario.controller_rows()
    batch = batch_of(rows)
    decoded = decode_batch(batch)
    assert decoded.schema == schema.DECODED_ARROW
    exchanges = decoded.slice(0, len(rows))  # the exchange rows come first, in the capture's order
    assert exchanges.column("row_kind").to_pylist() == [schema.EXCHANGE_ROW] * len(rows)
    assert decoded.column("row_kind").null_count == 0  # every row has a kind
    assert sum(kind == schema.EXCHANGE_ROW for kind in decoded.column("row_kind").to_pylist()) == len(rows)
    for name in schema.ENVELOPE:
        assert exchanges.column(name).combine_chunks().equals(batch.column(name)), name
    assert exchanges.column("request_decoded").to_pylist() == [True] * len(rows)
    assert exchanges.column("decode_error").null_count == len(rows)


def test_rows_an_exchange_names_carry_its_envelope() -> None:
    rows = scenario.controller_rows()
    decoded = decode_batch(batch_of(rows))
    exchanges = {row["request_digest"]: row for row in of_kind(decoded, schema.EXCHANGE_ROW)}
    named = [row for row in decoded.to_pylist() if row["row_kind"] != schema.EXCHANGE_ROW]
    assert {row["row_kind"] for row in named} == {schema.PARTITION_ROW, schema.TOPIC_NAME_ROW, schema.LISTENER_ROW}
    for row in named:
        exchange = exchanges[row["request_digest"]]
        assert all(row[name] == exchange[name] for name in schema.ENVELOPE), row
    for row in of_kind(decoded, schema.PARTITION_ROW):  # the exchange's facts, the partition's error
        exchange = exchanges[row["request_digest"]]
        assert (row["api_name"], row["broker_id"], row["broker_epoch"], row["request_decoded"]) == (
            exchange["api_name"],
            exchange["broker_id"],
            exchange["broker_epoch"],
            True,
        )
        assert row["request_bytes"] is None and row["decode_error"] is None


def test_the_facts_of_each_api() -> None:
    rows = {row.correlation_id: row for row in scenario.controller_rows()}
    decoded = decode_batch(batch_of(list(rows.values())))
    exchanges = {row["correlation_id"]: row for row in of_kind(decoded, schema.EXCHANGE_ROW)}
    by_api: dict[str, list[dict[str, object]]] = {}
    for correlation_id, row in exchanges.items():
        by_api.setdefault(row["api_name"], []).append(row)  # type: ignore[arg-type]
        assert row["api_name"] is not None and rows[correlation_id].api_key == row["api_key"]
    registration = by_api["BrokerRegistration"][0]
    assert (registration["broker_id"], registration["broker_epoch"]) == (1, 10)
    listeners = of_kind(decoded, schema.LISTENER_ROW)
    first = [row for row in listeners if row["correlation_id"] == registration["correlation_id"]]
    assert [(row["listener"], row["broker_id"], row["error_code"]) for row in first] == [("127.0.0.1:9101", 1, 0)]
    exchange_names = {row["correlation_id"]: row["api_name"] for row in exchanges.values()}
    named = {(row["topic_id"], row["topic"]) for row in of_kind(decoded, schema.TOPIC_NAME_ROW)}
    assert named == {(str(scenario.ORDERS_ID), "orders")}
    named_by = {
        exchange_names[row["correlation_id"]]
        for row in of_kind(decoded, schema.TOPIC_NAME_ROW)
        if (row["topic_id"], row["topic"]) == (str(scenario.ORDERS_ID), "orders")
    }
    assert named_by == {"CreateTopics", "LeaderAndIsr"}
    leader_and_isr = by_api["LeaderAndIsr"][0]
    assert leader_and_isr["broker_id"] is None and leader_and_isr["broker_epoch"] == 10
    assert [row["shutdown_state"] for row in by_api["ControlledShutdown"]] == ["requested", "complete"]
    assert [row["shutdown_state"] for row in by_api["BrokerHeartbeat"]] == [None, None, None, "requested", "complete"]
    replica_states = [
        row["replica_state"] for row in of_kind(decoded, schema.PARTITION_ROW) if row["api_name"] == "AlterReplicaState"
    ]
    assert replica_states == ["OFFLINE", "ONLINE"]


def test_a_rejected_shutdown_and_an_unknown_replica_state() -> None:
    stale = scenario.heartbeat(1, 9, 0, error=77, want=True)
    unknown = scenario.alter_replica_state(ONLINE + 5, 1)
    decoded = decode_batch(batch_of([stale, unknown]))
    assert of_kind(decoded, schema.EXCHANGE_ROW)[0]["shutdown_state"] == "rejected"
    assert of_kind(decoded, schema.PARTITION_ROW)[0]["replica_state"] == "UNKNOWN(7)"


def test_an_exchange_without_a_response_has_no_error_and_no_granted_state() -> None:
    row = scenario.alter_partition((1, 2), 0, 0, granted=1)._replace(response=None, response_time_ns=None)
    decoded = decode_batch(batch_of([row]))
    exchange = of_kind(decoded, schema.EXCHANGE_ROW)[0]
    assert (exchange["error_code"], exchange["error_name"], exchange["response_bytes"]) == (None, None, None)
    (partition,) = of_kind(decoded, schema.PARTITION_ROW)
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


def test_a_part_that_is_no_capture_parquet_is_refused_in_one_line(tmp_path: Path) -> None:
    """The executors read the parts themselves: the driver reads each footer first, so a part cut
    short (a copy that stopped) or a Parquet file of other columns is one line before any Spark work."""
    write_capture(tmp_path / "cut", [scenario.heartbeat(1, 10, 0)])
    (part,) = (tmp_path / "cut").iterdir()
    part.write_bytes(part.read_bytes()[:-100])
    foreign = tmp_path / "foreign" / "capture-0000000000000000001-000000.parquet"
    foreign.parent.mkdir()
    pq.write_table(pa.table({"request_time_ns": [1]}), foreign)
    with pytest.raises(CaptureError, match=rf"^capture dir {tmp_path / 'cut'}: {part.name}: not a readable Parquet"):
        check_capture_dirs([tmp_path / "cut"])
    with pytest.raises(CaptureError, match=rf"^capture dir {tmp_path / 'foreign'}: {foreign.name}: not a capture part"):
        check_capture_dirs([tmp_path / "foreign"])


def test_the_request_digest_is_sparks_xxhash64_of_the_frame(spark: SparkSession) -> None:
    """Rows digested in the executors (capture parts) join rows Spark digested before, and those
    of a pcap: the digest is Spark's own `xxhash64` of the request frame, bit for bit."""
    frames = [b"", b"a", bytes(range(256)), *(row.request for row in scenario.corrupt_rows())]
    frames += [scenario.heartbeat(1, 10, at).request for at in range(50)]
    sparks = spark.createDataFrame([(frame,) for frame in frames], "frame binary").select(F.xxhash64("frame"))
    assert request_digests(frames).to_pylist() == [row[0] for row in sparks.collect()]
    assert min(request_digests(frames).to_pylist()) < 0  # signed, as Spark's long


def test_spark_takes_in_decoded_rows_only(spark: SparkSession, tmp_path: Path) -> None:
    """The JVM never reads a capture's frames: the parts are read by the executors' Python, so the
    plan scans no file and no column holds a frame."""
    write_capture(tmp_path / "a", [scenario.heartbeat(1, 10, at) for at in range(3)])
    decoded = read_captures(spark, check_capture_dirs([tmp_path / "a"]))
    plan = decoded._jdf.queryExecution().executedPlan().toString()
    assert "FileScan" not in plan and "MapInArrow" in plan, plan
    assert {"request", "response"}.isdisjoint(decoded.columns)
    assert decoded.count() == 3


def test_each_task_is_a_spark_partition_of_its_own(spark: SparkSession) -> None:
    """The tasks `balanced` makes are the tasks Spark runs: one per partition, its parts together."""
    tasks = [[("a", "controller"), ("c", "fleet")], [("b", "controller")], [("d", "controller")]]
    partitions = task_frame(spark, tasks).rdd.glom().collect()
    assert [[[(part.path, part.source) for part in row.parts] for row in rows] for rows in partitions] == [
        [task] for task in tasks
    ]


@pytest.mark.parametrize(
    ("sizes", "slots", "expected"),
    [
        ([], 2, []),
        ([10], 2, [["p0"]]),  # never an empty task
        ([10, 10, 10], 2, [["p0", "p2"], ["p1"]]),
        ([1, TASK_BYTES * 3 // 2, 2, 3], 1, [["p1"], ["p0", "p2", "p3"]]),  # 1.5 x TASK_BYTES: 2 tasks
        ([5, 1, 1, 1, 1, 1], 2, [["p0"], ["p1", "p2", "p3", "p4", "p5"]]),  # the largest first
    ],
)
def test_parts_go_to_tasks_of_about_task_bytes_on_every_core(
    sizes: list[int], slots: int, expected: list[list[str]]
) -> None:
    parts = [(f"p{index}", "controller", size) for index, size in enumerate(sizes)]
    tasks = balanced(parts, slots)
    assert [[path for path, _ in task] for task in tasks] == expected


@pytest.mark.parametrize("version", [4, 7])
def test_an_update_metadata_gives_the_partition_states_it_tells_a_broker(version: int) -> None:
    """A ZooKeeper-era controller's UpdateMetadata (as a pcap shows it): granted states like LeaderAndIsr's;
    ungrouped before v5, grouped by topic (with its id from v7) after."""
    states = [
        UpdateMetadataRequestPartitionState(
            topic_name="orders" if version < 5 else "", partition_index=index, controller_epoch=3, leader=index + 1,
            leader_epoch=5 + index, isr=(index + 1, 3), zk_version=11 + index, replicas=(index + 1, 2, 3),
        )
        for index in range(2)
    ]  # fmt: skip
    if version < 5:
        request = UpdateMetadataRequest(
            controller_id=9, controller_epoch=3, ungrouped_partition_states=tuple(states), live_brokers=()
        )
    else:
        topic = UpdateMetadataRequestTopicState(topic_name="orders", topic_id=scenario.ORDERS_ID,
                                                partition_states=tuple(states))  # fmt: skip
        request = UpdateMetadataRequest(
            controller_id=9, controller_epoch=3, broker_epoch=44, topic_states=(topic,), live_brokers=()
        )
    row = exchange(request, version, UpdateMetadataResponse(error_code=0), at_ms=5.0, direction=OUTBOUND)
    decoded = decode_batch(batch_of([row]))
    (top,) = of_kind(decoded, schema.EXCHANGE_ROW)
    assert (top["api_name"], top["error_code"], top["request_decoded"]) == ("UpdateMetadata", 0, True)
    partitions = of_kind(decoded, schema.PARTITION_ROW)
    assert [
        (p["topic"], p["partition"], p["leader"], p["leader_epoch_granted"], p["partition_epoch_granted"],
         p["isr_after"], p["error_code"])
        for p in partitions
    ] == [("orders", 0, 1, 5, 11, [1, 3], 0), ("orders", 1, 2, 6, 12, [2, 3], 0)]  # fmt: skip
    names = [(row["topic_id"], row["topic"]) for row in of_kind(decoded, schema.TOPIC_NAME_ROW)]
    assert names == ([(str(scenario.ORDERS_ID), "orders")] if version >= 7 else [])
